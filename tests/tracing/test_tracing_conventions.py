"""The attribute names in `promptimus.tracing.conventions` are the ones the convention packages
define (checked against the installed `openinference-semantic-conventions` and
`opentelemetry-semantic-conventions`), so a rename upstream fails here, not in a backend."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from promptimus.tracing import conventions as c

semconv = pytest.importorskip("openinference.semconv.trace", reason="dev group not installed")
genai = pytest.importorskip(
    "opentelemetry.semconv._incubating.attributes.gen_ai_attributes",
    reason="dev group not installed",
)


def upstream_values(*classes: type) -> set[str]:
    return {
        value
        for cls in classes
        for name, value in vars(cls).items()
        if name.isupper() and isinstance(value, str)
    }


def test_openinference_names_exist_upstream() -> None:
    known = upstream_values(
        semconv.SpanAttributes,
        semconv.MessageAttributes,
        semconv.ToolCallAttributes,
        semconv.ToolAttributes,
        semconv.DocumentAttributes,
        semconv.RerankerAttributes,
        semconv.EmbeddingAttributes,
    )
    ours = {
        value
        for name, value in vars(c).items()
        if name.isupper()
        and not name.endswith("_VERSION")
        and isinstance(value, str)
        and "." in value
        and not value.startswith("gen_ai.")
        and "/" not in value
    }
    assert ours - known == set()
    assert {k.value for k in semconv.OpenInferenceSpanKindValues} >= c.SPAN_KINDS


def test_genai_names_exist_upstream() -> None:
    known = {v for k, v in vars(genai).items() if k.startswith("GEN_AI_") and isinstance(v, str)}
    ours = {v for v in vars(c).values() if isinstance(v, str) and v.startswith("gen_ai.")}
    assert ours - known == set()


def test_the_pinned_openinference_version_is_the_installed_one() -> None:
    assert version("openinference-semantic-conventions") == c.OPENINFERENCE_CONVENTIONS_VERSION


def test_a_secret_with_a_quote_or_backslash_is_redacted_in_json_too() -> None:
    from promptimus.tracing.attribute_values import REDACTED, ValueEncoder

    secret = 'pa"ss\\word-1234'
    encoder = ValueEncoder(1000)
    encoder.add_secrets([secret])
    written = encoder.json({"password": secret, "note": f"it is {secret}"})
    assert written.count(REDACTED) == 2 and "word-1234" not in written
