"""The error body a server sends for a request larger than its context window, per server kind."""

from __future__ import annotations

from typing import Any

__all__ = ["context_overflow_body"]


def context_overflow_body(dialect: str, n_ctx: int, n_prompt_tokens: int) -> tuple[int, Any]:
    """(status, body) a server sends for a request larger than its context window, in the
    shape of ``dialect``: "openai", "llama.cpp" or "vllm" (each paraphrased, same fields)."""
    if dialect == "openai":
        return 400, {
            "error": {
                "message": f"This model's maximum context length is {n_ctx} tokens. However, "
                f"your messages resulted in {n_prompt_tokens} tokens. Please reduce the length "
                "of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if dialect == "llama.cpp":
        return 400, {
            "error": {
                "code": 400,
                "message": f"request ({n_prompt_tokens} tokens) exceeds the available context "
                f"size ({n_ctx} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": n_prompt_tokens,
                "n_ctx": n_ctx,
            }
        }
    if dialect == "vllm":
        return 400, {
            "object": "error",
            "message": f"This model's maximum context length is {n_ctx} tokens. However, you "
            f"requested {n_prompt_tokens} tokens ({n_prompt_tokens} in the messages, 0 in the "
            "completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    raise ValueError(f"unknown context-overflow dialect {dialect!r}; use openai, llama.cpp, vllm")
