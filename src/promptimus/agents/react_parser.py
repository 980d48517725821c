"""Parse a ReACT reply (`Thought:` / `Action:` / `Action Input:` / `Answer:`) into an action or an
answer, forgiving the ways real models bend the format:

- markers in any case, decorated with markdown (`**Action:**`, `- Action:`, `### Answer:`);
- `Final Answer:` as well as `Answer:`;
- `Action Input` that is `{}`, empty, `None` or missing (a tool without arguments), nested JSON,
  JSON inside a code fence, JSON followed by stray text or a made-up `Observation:`;
- a call written inline as `Action: name({"x": 1})`;
- the whole reply wrapped in a code fence.

Whichever of `Action:` and `Answer:` comes first decides what the reply is. A reply that cannot
be understood — including JSON nested too deeply or with an absurdly long number (see
`promptimus.model_json`) — raises `ReactParseError` whose message is written for the model, so
the agent can send it back and let the model correct itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ModelJSONTooComplex, ReactParseError
from ..model_json import decode_json_prefix

__all__ = ["ReactAction", "ReactAnswer", "parse_react"]

_MARKER = re.compile(
    r"^[ \t>*_#-]*(thought|action[ \t_]*input|action|final[ \t_]*answer|answer)[ \t*_]*:[ \t*_]*",
    re.IGNORECASE | re.MULTILINE,
)
_INLINE_CALL = re.compile(r"^([A-Za-z0-9_.-]+)\s*\((.*)\)\s*$", re.DOTALL)
_EMPTY_INPUTS = {"", "{}", "none", "null", "n/a", "no input", "()"}
_FORMAT_HINT = (
    "Reply in this format:\nThought: <your reasoning>\nAction: <tool name>\n"
    'Action Input: <the arguments as one JSON object, e.g. {"city": "Paris"}, or {} for none>\n'
    "or, when you can answer:\nThought: <your reasoning>\nAnswer: <your answer>"
)


@dataclass(frozen=True, slots=True)
class ReactAction:
    """The model asks to run `tool` with `arguments`. `text` is the reply rewritten in the
    canonical format, without anything the model made up after the arguments (an `Observation:`),
    which is what the agent keeps in the conversation."""

    tool: str
    arguments: dict[str, Any]
    arguments_text: str
    thought: str | None
    text: str


@dataclass(frozen=True, slots=True)
class ReactAnswer:
    """The model's final answer."""

    answer: str
    thought: str | None


def _kind(label: str) -> str:
    label = re.sub(r"[ \t_]+", " ", label.lower())
    if label == "action input":
        return "input"
    if label.endswith("answer"):
        return "answer"
    return label  # "thought" or "action"


def _strip_fence_edges(text: str) -> str:
    """Drop a code fence that only opens or only closes inside `text` (the rest of a fence that
    wrapped the whole reply)."""
    text = text.strip()
    if text.count("```") % 2 == 1:
        if text.endswith("```"):
            text = text[:-3].rstrip()
        elif text.startswith("```"):
            text = text.split("\n", 1)[1] if "\n" in text else ""
    return text.strip()


def _canonical_action(thought: str | None, name: str, arguments_text: str) -> str:
    head = f"Thought: {thought}\n" if thought else ""
    return f"{head}Action: {name}\nAction Input: {arguments_text}"


def _clean_name(raw: str) -> str:
    line = raw.strip().split("\n", 1)[0].strip()
    return line.strip("`'\"*[]<> \t")


def _decode_object(text: str, start: int) -> tuple[dict[str, Any], int]:
    """Decode the JSON object starting at `text[start]` ("{"); return it and where it ends."""
    try:
        value, end = decode_json_prefix(text, start)
    except ModelJSONTooComplex as exc:
        raise ReactParseError(
            f"The Action Input cannot be used: {exc.msg}. Send simpler arguments as one JSON "
            "object."
        ) from None
    except json.JSONDecodeError as exc:
        raise ReactParseError(
            f"The Action Input is not valid JSON ({exc.msg} at character {exc.pos - start}). "
            'Write the arguments as one JSON object with double-quoted keys, e.g. {"x": 1}.'
        ) from None
    if not isinstance(value, dict):
        raise ReactParseError(
            "The Action Input must be a JSON object of named arguments, e.g. "
            f'{{"x": 1}}, not {type(value).__name__}.'
        )
    return value, end


def _parse_input(text: str, start: int, stop: int) -> tuple[dict[str, Any], str]:
    """Arguments from the Action Input section `text[start:stop]` (JSON may run past `stop`)."""
    section = text[start:stop]
    brace = section.find("{")
    if brace == -1:
        bare = section.strip().strip("`").strip()
        if bare.lower().removeprefix("json").strip() in _EMPTY_INPUTS:
            return {}, "{}"
        raise ReactParseError(
            f"The Action Input {bare[:80]!r} is not a JSON object. Write the arguments as one "
            'JSON object, e.g. {"query": "weather in Paris"}, or {} if the tool takes none.'
        )
    head = section[:brace].strip().strip("`").strip().lower().removeprefix("json").strip()
    if head:
        raise ReactParseError(
            f"The Action Input has text before its JSON ({head[:40]!r}). Write only the "
            'arguments as one JSON object, e.g. {"x": 1}.'
        )
    value, end = _decode_object(text, start + brace)
    return value, text[start + brace : end]


def parse_react(text: str) -> ReactAction | ReactAnswer:
    """Parse one ReACT reply; raise `ReactParseError` (a message for the model) if impossible."""
    markers = [(m, _kind(m.group(1))) for m in _MARKER.finditer(text)]
    thought: str | None = None
    for index, (match, kind) in enumerate(markers):
        stop = markers[index + 1][0].start() if index + 1 < len(markers) else len(text)
        if kind == "thought":
            if thought is None:
                thought = _strip_fence_edges(text[match.end() : stop]) or None
            continue
        if kind == "answer":
            answer = _strip_fence_edges(text[match.end() :])
            if not answer:
                raise ReactParseError("Your `Answer:` is empty. " + _FORMAT_HINT)
            return ReactAnswer(answer=answer, thought=thought)
        if kind == "input":
            raise ReactParseError(
                "Your `Action Input:` has no `Action:` line before it. " + _FORMAT_HINT
            )
        return _parse_action(text, markers, index, stop, thought)
    raise ReactParseError(
        "Your reply has neither an `Action:` nor an `Answer:` line. " + _FORMAT_HINT
    )


def _parse_action(
    text: str,
    markers: list[tuple[re.Match[str], str]],
    index: int,
    stop: int,
    thought: str | None,
) -> ReactAction:
    match = markers[index][0]
    raw = text[match.end() : stop]
    following = markers[index + 1] if index + 1 < len(markers) else None
    if following is not None and following[1] == "input":
        name = _clean_name(raw)
        input_start = following[0].end()
        input_stop = markers[index + 2][0].start() if index + 2 < len(markers) else len(text)
        arguments, arguments_text = _parse_input(text, input_start, input_stop)
    else:
        inline = _INLINE_CALL.match(_strip_fence_edges(raw).strip("`"))
        if inline is not None:
            name = inline.group(1)
            arguments, arguments_text = _inline_arguments(inline.group(2).strip())
        else:  # no Action Input at all: a tool without arguments
            name = _clean_name(raw)
            arguments, arguments_text = {}, "{}"
    if not name:
        raise ReactParseError("Your `Action:` line names no tool. " + _FORMAT_HINT)
    return ReactAction(
        tool=name,
        arguments=arguments,
        arguments_text=arguments_text,
        thought=thought,
        text=_canonical_action(thought, name, arguments_text),
    )


def _inline_arguments(body: str) -> tuple[dict[str, Any], str]:
    if not body:
        return {}, "{}"
    if body.startswith("{"):
        value, end = _decode_object(body, 0)
        return value, body[:end]
    raise ReactParseError(
        f"The tool call arguments {body[:80]!r} are not a JSON object. Use `Action: <tool name>` "
        'and then `Action Input: {"x": 1}` on its own line.'
    )
