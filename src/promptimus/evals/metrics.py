"""Built-in metrics. Each is `fn(example, output) -> Score`, comparing the output (see
`output_text`) with `example.expected`, and explains a miss in `Score.feedback`.

Options are keyword-only; bind them with `functools.partial(exact_match, ignore_case=True)`.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InvalidArgument
from .example import Example
from .output_text import output_data, output_text
from .score import Score

__all__ = ["contains", "exact_match", "f1", "json_match"]

_SHOW = 120


def _short(text: str) -> str:
    return repr(text if len(text) <= _SHOW else text[:_SHOW] + "…")


def _expected(example: Example, metric: str) -> Any:
    if example.expected is None:
        raise InvalidArgument(
            f"{metric} needs example.expected, and this example has none: give every example "
            "an expected value, or use a metric that needs none (LLMJudge, your own)."
        )
    return example.expected


def _answers(expected: Any) -> list[Any]:
    """A list or tuple of expected texts means "any of these"."""
    return list(expected) if isinstance(expected, list | tuple) else [expected]


def _normal(text: str, ignore_case: bool, strip: bool) -> str:
    text = text.strip() if strip else text
    return text.casefold() if ignore_case else text


def exact_match(
    example: Example, output: Any, *, ignore_case: bool = False, strip: bool = True
) -> Score:
    """1.0 when the output's text equals the expected text (or one of a list of them), else 0.
    A structured output (pydantic model, dict) is compared with a structured expected value as
    data, field for field."""
    expected = _expected(example, "exact_match")
    if not isinstance(output, str) and not isinstance(expected, str | list | tuple):
        try:
            got, want = output_data(output), output_data(expected)
        except ValueError:
            pass
        else:
            if isinstance(want, dict | list):
                if got == want:
                    return Score(1.0)
                shown = f"expected {_short(output_text(want))}, got {_short(output_text(got))}"
                return Score(0.0, shown)
    text = _normal(output_text(output), ignore_case, strip)
    answers = _answers(expected)
    if any(text == _normal(output_text(a), ignore_case, strip) for a in answers):
        return Score(1.0)
    wanted = " or ".join(_short(output_text(a)) for a in answers)
    return Score(0.0, f"expected {wanted}, got {_short(output_text(output))}")


def contains(example: Example, output: Any, *, ignore_case: bool = False) -> Score:
    """The share of expected texts found in the output's text: one text scores 1 or 0; a list
    scores the fraction present, and the feedback names the missing ones."""
    expected = _expected(example, "contains")
    text = _normal(output_text(output), ignore_case, False)
    needles = [output_text(item) for item in _answers(expected)]
    if not needles:
        return Score(1.0)
    missing = [n for n in needles if _normal(n, ignore_case, False) not in text]
    value = 1 - len(missing) / len(needles)
    if not missing:
        return Score(value)
    return Score(
        value,
        "the output does not contain "
        + ", ".join(_short(n) for n in missing)
        + f"; it was {_short(output_text(output))}",
    )


_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}]")


def _tokens(text: str) -> list[str]:
    return _PUNCTUATION.sub(" ", text.casefold()).split()


def _f1(got: Sequence[str], want: Sequence[str]) -> tuple[float, Counter[str], Counter[str]]:
    got_counts, want_counts = Counter(got), Counter(want)
    common = sum((got_counts & want_counts).values())
    if not got and not want:
        return 1.0, Counter(), Counter()
    if common == 0:
        return 0.0, want_counts, got_counts
    precision, recall = common / len(got), common / len(want)
    value = 2 * precision * recall / (precision + recall)
    return value, want_counts - got_counts, got_counts - want_counts


def f1(example: Example, output: Any) -> Score:
    """Token-overlap F1 (case and punctuation ignored, words counted with repeats) between the
    output's text and the expected text; with a list of expected texts, the best of them."""
    expected = _expected(example, "f1")
    got = _tokens(output_text(output))
    best: tuple[float, Counter[str], Counter[str]] | None = None
    for answer in _answers(expected):
        result = _f1(got, _tokens(output_text(answer)))
        if best is None or result[0] > best[0]:
            best = result
    assert best is not None
    value, missing, extra = best
    if value == 1.0:
        return Score(1.0)
    parts = []
    if missing:
        parts.append("missing words: " + ", ".join(sorted(missing.elements())[:20]))
    if extra:
        parts.append("extra words: " + ", ".join(sorted(extra.elements())[:20]))
    return Score(value, "; ".join(parts))


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


_MISSING = object()


def _lookup(data: Any, path: str) -> Any:
    for key in path.split(".") if path else ():
        if not isinstance(data, dict) or key not in data:
            return _MISSING
        data = data[key]
    return data


def json_match(example: Example, output: Any) -> Score:
    """Field by field: the share of the expected object's fields (nested objects are followed,
    `address.city`) whose value the output has too. The output may be a pydantic model, a dict,
    or text holding JSON; fields the output has beyond the expected ones are ignored. The
    feedback names every wrong or missing field."""
    expected = output_data(_expected(example, "json_match"))
    try:
        got = output_data(output)
    except ValueError as exc:
        return Score(0.0, str(exc))
    fields = list(_leaves(expected))
    wrong = []
    for path, want in fields:
        have = _lookup(got, path)
        if have is _MISSING:
            wrong.append(f"{path or '(value)'}: missing, expected {want!r}")
        elif have != want:
            wrong.append(f"{path or '(value)'}: expected {want!r}, got {have!r}")
    return Score(1 - len(wrong) / len(fields), "; ".join(wrong))
