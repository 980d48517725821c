"""What servers send back when they refuse a request's shape: request-validation reports in each
server's dialect, and the fake server's refusals of a `response_format` it does not take."""

from __future__ import annotations

from typing import Any

__all__ = ["rejection_body", "response_format_rejection_body"]


def _loc(field: str) -> tuple[str | int, ...]:
    return ("body", *(int(part) if part.isdigit() else part for part in field.split(".")))


def _validation_error(field: str, value: Any) -> dict[str, Any]:
    """One pydantic error as FastAPI reports it (the dict whose repr the text dialects show)."""
    if field == "response_format.type":
        expected = "'text' or 'json_object'" if value != "json_object" else "'text'"
        return {
            "type": "literal_error",
            "loc": _loc(field),
            "msg": f"Input should be {expected}",
            "input": value,
            "ctx": {"expected": expected},
        }
    return {
        "type": "value_error",
        "loc": _loc(field),
        "msg": "Value error, not accepted by this server",
        "input": value,
    }


def rejection_body(dialect: str, field: str, value: Any = "json_schema") -> tuple[int, Any]:
    """(status, body) a server sends for a request whose ``field`` (a dotted path such as
    ``response_format.type``) fails its validation, in the ``dialect`` of (see
    ``REJECTION_DIALECTS``):

    - ``llama-cpp-python``: a 500 ``internal_server_error`` whose message is FastAPI's text report
      ("1 validation error:" and the error's repr with ``'loc': ('body', ...)``) and the
      traceback line, as its server 0.3.x sends; for ``response_format.type`` and
      ``json_schema`` it is byte for byte what that server answered;
    - ``fastapi``: a 422 with FastAPI's ``{"detail": [{"loc", "msg", ...}]}``;
    - ``pydantic``: a 500 whose message is pydantic's own report ("1 validation error for
      ChatCompletionRequest", the field path, the problem), as servers that let the
      ValidationError escape send;
    - ``openai``: a 400 ``invalid_request_error`` with ``param`` naming the field;
    - ``vllm``: a flat 400 ``BadRequestError`` carrying FastAPI's text report;
    - ``ollama``: a 400 whose ``error`` is a plain sentence (it names no field).
    """
    error = _validation_error(field, value)
    report = f"1 validation error:\n  {error!r}"
    if dialect == "llama-cpp-python":
        message = (
            f'{report}\n\n  File ".../llama_cpp/server/app.py", line 376, in '
            "create_chat_completion\n    POST /v1/chat/completions"
        )
        return 500, {
            "error": {
                "message": message,
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        }
    if dialect == "fastapi":
        detail = {**error, "loc": list(error["loc"])}
        return 422, {"detail": [detail]}
    if dialect == "pydantic":
        message = (
            f"1 validation error for ChatCompletionRequest\n{field}\n  {error['msg']} "
            f"[type={error['type']}, input_value={value!r}, input_type={type(value).__name__}]"
        )
        return 500, {"error": {"message": message, "type": "server_error", "code": None}}
    if dialect == "openai":
        return 400, {
            "error": {
                "message": f"Invalid value for '{field}': {value!r} is not supported with this "
                "model.",
                "type": "invalid_request_error",
                "param": field,
                "code": "invalid_value",
            }
        }
    if dialect == "vllm":
        return 400, {
            "object": "error",
            "message": report,
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    if dialect == "ollama":
        return 400, {"error": f"invalid {field.split('.')[0]}: {value!r} is not supported"}
    raise ValueError(
        f"unknown rejection dialect {dialect!r}; use one of "
        "llama-cpp-python, fastapi, pydantic, openai, vllm, ollama"
    )


def response_format_rejection_body(kind: str) -> dict[str, Any]:
    """The default answer to a request whose ``response_format`` type the server rejects."""
    return {
        "error": {
            "message": f"fake server: response_format type {kind!r} is not supported by this "
            "server",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
    }


# --- chat -------------------------------------------------------------------------------------
