"""CompositeTool: a batch of sub-tool calls in one tool call, errors recorded per call."""

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from promptimus.errors import DuplicateToolName, LLMNotSet, ToolArgumentsError, ToolError
from promptimus.tools.composite_tool import CompositeTool
from promptimus.tools.run_context import RunContext
from promptimus.tools.tool import Tool


def make_files() -> tuple[CompositeTool, dict[str, str]]:
    store: dict[str, str] = {}

    @Tool.decorate
    def write(path: str, content: str) -> None:
        """Write to a file."""
        store[path] = content

    @Tool.decorate
    async def read(path: str) -> str:
        """Read a file."""
        return store[path]

    @Tool.decorate
    def listing() -> list[str]:
        """List files."""
        return sorted(store)

    return CompositeTool("file", "File operations.", [write, read, listing]), store


async def test_calls_run_in_order_and_results_keep_json_types() -> None:
    files, store = make_files()
    out = await files.call(
        json.dumps(
            {
                "calls": [
                    {"name": "write", "args": {"path": "/a", "content": "hello"}},
                    {"name": "read", "args": {"path": "/a"}},
                    {"name": "listing"},
                ]
            }
        )
    )
    assert json.loads(out) == {
        "results": [
            {"name": "write", "result": "OK"},
            {"name": "read", "result": "hello"},
            {"name": "listing", "result": ["/a"]},
        ]
    }
    assert store == {"/a": "hello"}


async def test_partial_failure_is_recorded_and_the_rest_still_run() -> None:
    files, store = make_files()
    out = json.loads(
        await files.call(
            {
                "calls": [
                    {"name": "read", "args": {"path": "/missing"}},
                    {"name": "write", "args": {"path": "/b"}},
                    {"name": "delete", "args": {"path": "/a"}},
                    {"name": "write", "args": {"path": "/b", "content": "x"}},
                ]
            }
        )
    )
    results = out["results"]
    assert [r["name"] for r in results] == ["read", "write", "delete", "write"]
    assert "KeyError" in results[0]["error"]
    assert "content: missing required argument" in results[1]["error"]
    assert results[2]["error"] == "Unknown tool 'delete'; available: write, read, listing."
    assert results[3] == {"name": "write", "result": "OK"}
    assert store == {"/b": "x"}


async def test_malformed_outer_arguments_raise_for_the_agent_to_report() -> None:
    files, _ = make_files()
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        await files.call('{"calls": [')
    with pytest.raises(ToolArgumentsError, match="calls: missing required argument"):
        await files.call("{}")
    with pytest.raises(ToolArgumentsError, match=r"calls\.0\.name: missing"):
        await files.call({"calls": [{"args": {}}]})


async def test_user_fixable_errors_still_propagate() -> None:
    from promptimus.core import Module

    class NeedsLLM(Module):
        async def forward(self, request: str) -> str:
            return (await self.llm.achat([])).content

    batch = CompositeTool("batch", "Batch.", [Tool(NeedsLLM().forward, name="ask")])
    with pytest.raises(LLMNotSet):
        await batch.call({"calls": [{"name": "ask", "args": {"request": "hi"}}]})


async def test_context_reaches_sub_tools() -> None:
    @Tool.decorate
    def whoami(ctx: RunContext[str]) -> str:
        return ctx.deps

    batch = CompositeTool("batch", "Batch.", [whoami])
    out = await batch.call({"calls": [{"name": "whoami"}]}, RunContext(deps="ada"))
    assert json.loads(out) == {"results": [{"name": "whoami", "result": "ada"}]}


def test_schema_is_a_tagged_union_of_the_sub_tool_schemas() -> None:
    files, _ = make_files()
    assert files.parameters_schema == {
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "description": "The calls to make, run in this order.",
                "items": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "enum": ["write"]},
                                "args": {
                                    "type": "object",
                                    "properties": {
                                        "path": {"type": "string"},
                                        "content": {"type": "string"},
                                    },
                                    "required": ["path", "content"],
                                    "additionalProperties": False,
                                },
                            },
                            "required": ["name", "args"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "enum": ["read"]},
                                "args": {
                                    "type": "object",
                                    "properties": {"path": {"type": "string"}},
                                    "required": ["path"],
                                    "additionalProperties": False,
                                },
                            },
                            "required": ["name", "args"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "enum": ["listing"]},
                                "args": {
                                    "type": "object",
                                    "properties": {},
                                    "additionalProperties": False,
                                },
                            },
                            "required": ["name", "args"],
                            "additionalProperties": False,
                        },
                    ]
                },
            }
        },
        "required": ["calls"],
        "additionalProperties": False,
    }


class ShapeA(BaseModel):
    a: int


def other_shape_a() -> type[BaseModel]:
    class ShapeA(BaseModel):  # same name, different definition
        b: str

    return ShapeA


def test_defs_are_merged_and_clashing_definitions_are_renamed() -> None:
    Other = other_shape_a()

    def first(item: ShapeA) -> None: ...

    def second(item: Other) -> None: ...  # type: ignore[valid-type]

    assert Tool(second).parameters_schema["$defs"]["ShapeA"]["properties"] == {
        "b": {"type": "string"}
    }
    schema = CompositeTool("both", "Both.", [Tool(first), Tool(second)]).parameters_schema
    assert schema["$defs"] == {
        "ShapeA": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        "second_ShapeA": {
            "type": "object",
            "properties": {"b": {"type": "string"}},
            "required": ["b"],
        },
    }
    variants = schema["properties"]["calls"]["items"]["anyOf"]
    assert variants[0]["properties"]["args"]["properties"]["item"] == {"$ref": "#/$defs/ShapeA"}
    second_args = variants[1]["properties"]["args"]
    assert "$defs" not in second_args
    assert second_args["properties"]["item"] == {"$ref": "#/$defs/second_ShapeA"}


def test_identical_defs_are_shared() -> None:
    def first(item: ShapeA) -> None: ...

    def second(item: ShapeA) -> None: ...

    schema = CompositeTool("both", "Both.", [Tool(first), Tool(second)]).parameters_schema
    assert list(schema["$defs"]) == ["ShapeA"]


def test_description_lists_sub_tools_and_tracks_tuning() -> None:
    files, _ = make_files()
    text = files.to_openai()["function"]["description"]
    assert text.startswith("File operations.\n")
    assert text.endswith("- write: Write to a file.\n- read: Read a file.\n- listing: List files.")
    files.tools["read"].description.value = "Read a whole file."
    assert "- read: Read a whole file." in files.to_openai()["function"]["description"]
    assert files.describe_for_prompt().startswith("file: File operations.")


def test_sub_tool_descriptions_are_checkpointed_under_the_composite(tmp_path: Path) -> None:
    files, _ = make_files()
    assert files.state_dict() == {
        "description": "File operations.",
        "tools.write.description": "Write to a file.",
        "tools.read.description": "Read a file.",
        "tools.listing.description": "List files.",
    }
    files.tools["write"].description.value = "Tuned."
    files.save(tmp_path / "c.toml")
    fresh, _ = make_files()
    fresh.load(tmp_path / "c.toml")
    assert fresh.tools["write"].description.value == "Tuned."


def test_construction_errors() -> None:
    files, _ = make_files()
    tool = files.tools["write"]
    assert isinstance(tool, Tool)
    with pytest.raises(DuplicateToolName):
        CompositeTool("dup", "Dup.", [tool, Tool(lambda path: None, name="write")])
    with pytest.raises(ToolError, match="at least one"):
        CompositeTool("empty", "Empty.", [])
    with pytest.raises(ToolError, match="1 to 64"):
        CompositeTool("bad name", "Bad.", [tool])


async def test_direct_forward_takes_python_calls() -> None:
    files, store = make_files()
    out: dict[str, Any] = await files([{"name": "write", "args": {"path": "p", "content": "c"}}])
    assert out == {"results": [{"name": "write", "result": "OK"}]}
    assert store == {"p": "c"}
