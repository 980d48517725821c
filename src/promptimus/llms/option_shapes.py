"""Checks of the request options a provider translates itself (Anthropic, Gemini): each one of
the wrong shape is an `InvalidArgument` naming it, raised before anything is sent."""

from __future__ import annotations

from typing import Any

from promptimus.errors import InvalidArgument

__all__ = ["json_schema_of", "object_option", "options_dict", "text_list_option"]


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.60}"


def options_dict(value: Any, name: str, who: str) -> dict[str, Any]:
    """``value`` (a dict of option names, or None) as a new dict."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise InvalidArgument(
            f"{who}: {name} must be a dict of request options by name (e.g. "
            f"{{'temperature': 0}}), got {_shown(value)}."
        )
    return dict(value)


def object_option(options: dict[str, Any], key: str, who: str) -> dict[str, Any]:
    """The JSON object option ``key`` holds ({} when absent or None)."""
    value = options.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(name, str) for name in value):
        raise InvalidArgument(
            f"{who}: the {key} option must be a dict of fields by name, got {_shown(value)}."
        )
    return value


def text_list_option(value: Any, key: str, who: str) -> list[str]:
    """A text or list-of-texts option (``stop``) as a list of texts."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return list(value)
    raise InvalidArgument(
        f"{who}: the {key} option must be a text or a list of texts, got {_shown(value)}."
    )


def json_schema_of(
    response_format: Any, who: str, *, schema_required: bool = True
) -> tuple[str | None, dict[str, Any] | None]:
    """``(type, schema)`` of an OpenAI-style ``response_format`` (None, None when absent); a
    ``json_schema`` one carries ``{"json_schema": {"schema": {...}}}`` (the schema may be left
    out when not ``schema_required``)."""
    if response_format is None:
        return None, None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if not isinstance(kind, str):
        raise InvalidArgument(
            f"{who}: the response_format option must be a dict with a type, e.g. "
            "{'type': 'json_schema', 'json_schema': {'name': ..., 'schema': {...}}}, got "
            f"{_shown(response_format)}."
        )
    if kind != "json_schema":
        return kind, None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    absent = schema is None and not schema_required and isinstance(spec, dict | None)
    if not isinstance(schema, dict) and not absent:
        raise InvalidArgument(
            f"{who}: a json_schema response_format must hold its JSON schema as "
            "{'json_schema': {'name': ..., 'schema': {...}}}, got "
            f"{_shown(response_format)}."
        )
    return kind, schema
