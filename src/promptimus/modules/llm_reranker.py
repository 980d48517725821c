"""`LLMReranker`: ask a chat model to score how relevant each candidate document is to a query."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from promptimus.argument_checks import non_negative_int, positive_int
from promptimus.core import Module, Parameter
from promptimus.dto import Message, MessageRole
from promptimus.errors import FailedToParseOutput
from promptimus.model_json import decode_json
from promptimus.prompts.prompt import Prompt
from promptimus.prompts.template import format_template

if TYPE_CHECKING:
    from promptimus.dto import SearchHit

__all__ = ["LLMReranker", "parse_scores"]

DEFAULT_INSTRUCTIONS = """\
You are a search relevance judge. You get a query and numbered documents. Score how well each \
document answers the query, from 0 (irrelevant) to 10 (answers it fully).
Reply with one JSON object and nothing else, mapping every document number to its score, e.g. \
{{"1": 7, "2": 0, "3": 10}}."""

DEFAULT_REQUEST = """\
Query: {query}

Documents:
{documents}"""

_CORRECTION = (
    "I could not read scores from that reply ({error}). Reply with only a JSON object mapping each "
    'document number (1 to {n}) to a score from 0 to 10, e.g. {{"1": 7, "2": 0}}.'
)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_PAIR = re.compile(r"\[?#?\s*(\d+)\s*\]?\s*(?:\)|:|=|->|=>|-|–)\s*(-?\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"\d+")


class _Unreadable(ValueError):
    pass


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _doc_number(key: Any) -> int | None:
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str):
        match = _NUMBER.search(key)
        return int(match.group()) if match else None
    return None


def _json_candidates(text: str) -> list[Any]:
    blocks = [m.group(1) for m in _FENCE.finditer(text)] or [text]
    found: list[Any] = []
    for block in blocks:
        for opener, closer in ("{}", "[]"):
            start, end = block.find(opener), block.rfind(closer)
            if start != -1 and end > start:
                try:
                    found.append(decode_json(block[start : end + 1]))
                except ValueError:  # malformed, or past the limits of promptimus.model_json
                    continue
    return found


def _from_json(value: Any, n: int) -> dict[int, float]:
    scores: dict[int, float] = {}
    if isinstance(value, dict):
        for key, raw in value.items():
            number, score = _doc_number(key), _number(raw)
            if number is not None and score is not None and 1 <= number <= n:
                scores.setdefault(number - 1, score)
    elif isinstance(value, list):
        ranking = [_doc_number(item) for item in value if not isinstance(item, dict)]
        if ranking and all(r is not None for r in ranking):  # a ranking: best first
            for position, number in enumerate(ranking):
                if number is not None and 1 <= number <= n:
                    scores.setdefault(number - 1, float(len(ranking) - position))
        for item in value:
            if isinstance(item, dict):
                key = next((item[k] for k in ("id", "index", "doc", "document") if k in item), None)
                raw = next(
                    (item[k] for k in ("score", "relevance", "relevance_score") if k in item), None
                )
                number, score = _doc_number(key), _number(raw)
                if number is not None and score is not None and 1 <= number <= n:
                    scores.setdefault(number - 1, score)
    return scores


def parse_scores(text: str, n: int) -> dict[int, float]:
    """Read ``{0-based index: score}`` for documents numbered 1..n from a model's reply.

    Understands a JSON object ``{"1": 7, ...}``, a JSON ranking ``[3, 1, 2]`` (best first; turned
    into descending scores), a JSON list of ``{"id": 1, "score": 7}`` objects, each possibly inside
    a code fence or surrounded by prose, and finally plain ``1: 7`` lines. Numbers outside 1..n are
    ignored. Raises ``ValueError`` when no score can be read.
    """
    for candidate in _json_candidates(text):
        scores = _from_json(candidate, n)
        if scores:
            return scores
    scores = {}
    for number, raw in _PAIR.findall(text):
        if 1 <= int(number) <= n:
            scores.setdefault(int(number) - 1, float(raw))
    if not scores:
        raise _Unreadable("no document numbers with scores found")
    return scores


class LLMReranker(Module):
    """A chat model as a reranker: one call scores every candidate from 0 to 10.

    ``prompt`` (a `Prompt`: the system instructions, a template whose literal braces are doubled)
    and ``request`` (a Parameter with ``{query}`` and ``{documents}`` fields) are tunable and saved
    in checkpoints. Documents are numbered from 1 and cut to ``max_chars`` characters each; at most
    ``max_documents`` are sent, the rest keep their order after the scored ones. An unreadable
    reply is sent back with a correction up to ``max_retries`` times; after that
    `FailedToParseOutput` is raised. Documents the model did not score rank after the scored ones,
    in input order, with score 0.
    """

    def __init__(
        self,
        instructions: str = DEFAULT_INSTRUCTIONS,
        request: str = DEFAULT_REQUEST,
        *,
        max_chars: int = 2000,
        max_documents: int = 50,
        max_retries: int = 1,
    ) -> None:
        max_chars = positive_int(max_chars, "LLMReranker max_chars")
        max_documents = positive_int(max_documents, "LLMReranker max_documents")
        max_retries = non_negative_int(max_retries, "LLMReranker max_retries")
        super().__init__()
        self.prompt = Prompt(instructions)
        self.request = Parameter(request)
        self.max_chars = max_chars
        self.max_documents = max_documents
        self.max_retries = max_retries

    def _format_documents(self, hits: list[SearchHit]) -> str:
        lines = []
        for number, hit in enumerate(hits, start=1):
            text = " ".join(hit.document.split())
            if len(text) > self.max_chars:
                text = text[: self.max_chars - 1] + "…"
            lines.append(f"[{number}] {text}")
        return "\n".join(lines)

    async def rerank(
        self, query: str, hits: list[SearchHit], top_n: int | None = None
    ) -> list[SearchHit]:
        return await self.forward(query, hits, top_n)

    async def forward(
        self, query: str, hits: list[SearchHit], top_n: int | None = None
    ) -> list[SearchHit]:
        if top_n is not None:
            top_n = non_negative_int(top_n, "top_n (or None)")
        if not hits or top_n == 0:
            return []
        judged, rest = hits[: self.max_documents], hits[self.max_documents :]
        request = format_template(
            self.request.value,
            {"query": query, "documents": self._format_documents(judged)},
            where=f"LLMReranker {self.path!r} request",
        )
        history = [Message(role=MessageRole.USER, content=request)]
        replies: list[str] = []
        errors: list[str] = []
        for _ in range(self.max_retries + 1):
            reply = await self.prompt.forward(history)
            replies.append(reply.content)
            try:
                scores = parse_scores(reply.content, len(judged))
                break
            except ValueError as exc:
                errors.append(str(exc))
                correction = _CORRECTION.format(error=exc, n=len(judged))
                history = [*history, reply, Message(role=MessageRole.USER, content=correction)]
        else:
            raise FailedToParseOutput(
                f"LLMReranker {self.path!r} could not read document scores from "
                f"{len(replies)} repl{'y' if len(replies) == 1 else 'ies'} of the model; make the "
                "instructions ask for a JSON object of scores, or raise max_retries.",
                raw=replies,
                errors=errors,
            )
        order = sorted(range(len(judged)), key=lambda i: (i not in scores, -scores.get(i, 0.0), i))
        ranked = [replace(judged[i], score=scores.get(i, 0.0)) for i in order]
        ranked.extend(replace(hit, score=0.0) for hit in rest)
        return ranked if top_n is None else ranked[:top_n]
