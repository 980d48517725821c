"""Pinned JSON schemas for representative tool signatures, and docstring parsing.

This file uses `from __future__ import annotations`, so every signature here has string
annotations that the schema builder must resolve (test_composite_tool.py covers the other case).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from promptimus.errors import InvalidToolName, ToolError
from promptimus.tools.run_context import RunContext
from promptimus.tools.tool import Tool
from promptimus.tools.tool_schema import parse_docstring


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str = "Paris"


class Person(BaseModel):
    name: str
    address: Address


class Node(BaseModel):
    value: int
    children: list[Node] = []


def schema(fn: Any) -> dict[str, Any]:
    return Tool(fn).parameters_schema


# ---------------------------------------------------------------------------------- pinned


def test_zero_arg_tool_has_an_empty_object_schema() -> None:
    def now() -> str:
        return "noon"

    assert schema(now) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_scalar_types_are_real_json_types_and_defaults_make_arguments_optional() -> None:
    def f(a: int, b: float, c: str, d: bool = True, e: float = 0.5) -> None: ...

    assert schema(f) == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number"},
            "c": {"type": "string"},
            "d": {"type": "boolean", "default": True},
            "e": {"type": "number", "default": 0.5},
        },
        "required": ["a", "b", "c"],
        "additionalProperties": False,
    }


def test_literal_enum_and_optional() -> None:
    def f(unit: Literal["c", "f"], color: Color = Color.RED, note: str | None = None) -> None: ...

    assert schema(f) == {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["c", "f"]},
            "color": {"$ref": "#/$defs/Color", "default": "red"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["unit"],
        "additionalProperties": False,
        "$defs": {"Color": {"type": "string", "enum": ["red", "green"]}},
    }


def test_lists_and_dicts() -> None:
    def f(xs: list[int], tags: list[str] | None = None, extra: dict[str, float] = {}) -> None: ...  # noqa: B006

    assert schema(f) == {
        "type": "object",
        "properties": {
            "xs": {"type": "array", "items": {"type": "integer"}},
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
            },
            "extra": {
                "type": "object",
                "additionalProperties": {"type": "number"},
                "default": {},
            },
        },
        "required": ["xs"],
        "additionalProperties": False,
    }


def test_nested_models_live_in_top_level_defs_without_titles() -> None:
    def register(person: Person) -> None: ...

    assert schema(register) == {
        "type": "object",
        "properties": {"person": {"$ref": "#/$defs/Person"}},
        "required": ["person"],
        "additionalProperties": False,
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string", "default": "Paris"},
                },
                "required": ["street"],
            },
            "Person": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/Address"},
                },
                "required": ["name", "address"],
            },
        },
    }


def test_recursive_model_is_expressible() -> None:
    def walk(tree: Node) -> None: ...

    out = schema(walk)
    assert out["properties"] == {"tree": {"$ref": "#/$defs/Node"}}
    assert out["$defs"]["Node"]["properties"]["children"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Node"},
        "default": [],
    }


def test_args_kwargs_and_injected_context_never_reach_the_schema() -> None:
    def f(ctx: RunContext[int], query: str, *args: int, limit: int = 3, **kwargs: Any) -> None: ...

    assert schema(f) == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 3}},
        "required": ["query"],
        "additionalProperties": False,
    }


def test_optional_and_bare_run_context_are_injected_too() -> None:
    def f(a: int, ctx: RunContext | None = None) -> None: ...

    assert list(schema(f)["properties"]) == ["a"]


def test_annotated_descriptions_and_constraints() -> None:
    def f(
        city: Annotated[str, "The city name"],
        days: Annotated[int, Field(description="How many days", ge=1, le=7)] = 1,
    ) -> None:
        """Forecast.

        Args:
            city: overridden by Annotated.
            days: overridden by Field.
        """

    assert schema(f) == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name"},
            "days": {
                "type": "integer",
                "description": "How many days",
                "minimum": 1,
                "maximum": 7,
                "default": 1,
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_unannotated_parameter_accepts_any_json() -> None:
    def f(x, y=2) -> None:  # type: ignore[no-untyped-def]
        ...

    assert schema(f) == {
        "type": "object",
        "properties": {"x": {}, "y": {"default": 2}},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_a_property_called_title_survives_title_cleaning() -> None:
    class Book(BaseModel):
        title: str

    def f(title: str, book: Book) -> None: ...

    tool = Tool(f)
    assert tool.parameters_schema["properties"]["title"] == {"type": "string"}
    assert tool.parameters_schema["$defs"]["Book"]["properties"] == {"title": {"type": "string"}}


def test_parameter_names_that_clash_with_pydantic_attributes_work() -> None:
    def f(model_config: str, json: int, _private: int = 0) -> None: ...

    assert list(schema(f)["properties"]) == ["model_config", "json", "_private"]


def test_type_pydantic_cannot_describe_is_refused_with_advice() -> None:
    class Database:
        pass

    def f(db: Database) -> None: ...

    with pytest.raises(ToolError, match=r"RunContext\.deps"):
        Tool(f)


def test_unresolvable_string_annotation_is_refused_clearly() -> None:
    def f(a: Missing) -> None: ...  # type: ignore[name-defined] # noqa: F821

    with pytest.raises(ToolError, match="Missing"):
        Tool(f)


# ---------------------------------------------------------------------------------- docstrings


def google(a: int, b: str = "x") -> None:
    """Look something up.

    Longer explanation
    over two lines.

    Args:
        a (int): The first
            argument, wrapped.
        b: The second.

    Returns:
        Nothing at all.
    """


def numpy_style(a: int, b: str = "x", c: float = 0) -> None:
    """Look something up.

    Parameters
    ----------
    a : int
        The first
        argument.
    b, c
        Shared text.

    Returns
    -------
    None
    """


def sphinx(a: int, b: str = "x") -> None:
    """Look something up.

    :param a: The first
        argument.
    :param str b: The second.
    :returns: nothing.
    """


def test_google_docstring() -> None:
    tool = Tool(google)
    assert tool.description.value == "Look something up.\n\nLonger explanation\nover two lines."
    props = tool.parameters_schema["properties"]
    assert props["a"]["description"] == "The first argument, wrapped."
    assert props["b"]["description"] == "The second."


def test_numpy_docstring() -> None:
    tool = Tool(numpy_style)
    assert tool.description.value == "Look something up."
    props = tool.parameters_schema["properties"]
    assert props["a"]["description"] == "The first argument."
    assert props["b"]["description"] == props["c"]["description"] == "Shared text."


def test_sphinx_docstring() -> None:
    tool = Tool(sphinx)
    assert tool.description.value == "Look something up."
    props = tool.parameters_schema["properties"]
    assert props["a"]["description"] == "The first argument."
    assert props["b"]["description"] == "The second."


def test_docstring_without_sections_is_all_summary() -> None:
    parsed = parse_docstring("Just text.\n\nMore text.")
    assert parsed.summary == "Just text.\n\nMore text."
    assert parsed.params == {}


def test_google_section_ends_at_next_header() -> None:
    parsed = parse_docstring("Do.\n\nArgs:\n    x: the x.\nRaises:\n    ValueError: when bad.\n")
    assert parsed.params == {"x": "the x."}


def test_no_docstring_means_empty_description_and_no_description_key() -> None:
    def quiet(a: int) -> int:
        return a

    tool = Tool(quiet)
    assert tool.description.value == ""
    assert "description" not in tool.to_openai()["function"]


# ---------------------------------------------------------------------------------- names


@pytest.mark.parametrize("bad", ["", "has space", "dots.not.allowed", "x" * 65, "ünï"])
def test_invalid_tool_names_are_refused(bad: str) -> None:
    with pytest.raises(InvalidToolName, match="1 to 64 characters"):
        Tool(google, name=bad)


def test_lambda_needs_an_explicit_name() -> None:
    with pytest.raises(InvalidToolName, match="<lambda>"):
        Tool(lambda: None)
    assert Tool(lambda: None, name="noop").name == "noop"
