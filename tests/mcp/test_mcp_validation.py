"""How an MCP tool checks the model's arguments against the server's input schema: jsonschema-rs
lets valid arguments through, jsonschema judges and words everything it turns down, and no
`$ref` in a schema is ever fetched from the network."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

pytest.importorskip("mcp")

from promptimus.errors import ToolArgumentsError
from promptimus.mcp import MCPToolset
from promptimus.mcp.mcp_tool import MCPTool, _fast_check

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"enum": ["metric", "imperial"]},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "where": {"$ref": "#/$defs/point"},
    },
    "required": ["city"],
    "additionalProperties": False,
    "$defs": {
        "point": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
        }
    },
}

SAMPLES: list[Any] = [
    {"city": "Oslo"},
    {"city": "Oslo", "days": 3, "units": "metric", "tags": ["a", "b"]},
    {"city": "Oslo", "where": {"lat": 1.5, "lon": 2}},
    {"city": "O"},
    {"city": "Oslo", "days": 0},
    {"city": "Oslo", "days": 1.5},
    {"city": "Oslo", "units": "kelvin"},
    {"city": "Oslo", "tags": ["a", "a"]},
    {"city": "Oslo", "where": {"lat": 1}},
    {"city": "Oslo", "extra": True},
    {"days": 3},
    {"city": 12},
]


def make_tool(schema: dict[str, Any]) -> MCPTool:
    toolset = MCPToolset.stdio(sys.executable, ["-c", "pass"])  # never opened
    return MCPTool(toolset, "forecast", "Forecast.", schema)


@pytest.mark.parametrize("arguments", SAMPLES)
def test_the_fast_check_and_jsonschema_agree(arguments: dict[str, Any]) -> None:
    tool = make_tool(SCHEMA)
    assert tool._accepts is not None
    valid_for_jsonschema = not list(tool._validator.iter_errors(arguments))
    assert tool._accepts(arguments) is valid_for_jsonschema
    if valid_for_jsonschema:
        assert tool.validate(arguments) == arguments
    else:
        with pytest.raises(ToolArgumentsError, match="'forecast': invalid arguments"):
            tool.validate(arguments)


def test_a_schema_jsonschema_rs_cannot_compile_is_still_checked_by_jsonschema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "5"}}}
    assert _fast_check(schema) is None
    tool = make_tool(schema)
    assert tool.validate({}) == {}
    with pytest.raises(ToolArgumentsError, match="n: 'x' is not of type 'integer'"):
        tool.validate({"n": "x"})


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Counting.hits.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_ref_in_a_servers_schema_is_never_fetched(schema_host: str) -> None:
    # jsonschema and jsonschema-rs both fetch remote references by default; a server's schema
    # must not make the client reach out to hosts of the server's choosing (nor wait on them)
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": f"{schema_host}/n.json"}, "m": {"type": "integer"}},
    }
    tool = make_tool(schema)
    # what this side cannot check, the server judges; the rest is still checked here
    assert tool.validate({"n": "x"}) == {"n": "x"}
    with pytest.raises(ToolArgumentsError, match="m: 'y' is not of type 'integer'"):
        tool.validate({"m": "y"})
    assert _Counting.hits == []


def test_the_rest_of_the_arguments_is_checked_beside_a_remote_ref(schema_host: str) -> None:
    # the remote part is the server's to judge; a bad argument elsewhere is still caught here
    # (it was let through whole once the remote `$ref` was reached)
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": f"{schema_host}/n.json"}, "m": {"type": "integer"}},
    }
    tool = make_tool(schema)
    assert tool.validate({"n": "x", "m": 3}) == {"n": "x", "m": 3}
    with pytest.raises(ToolArgumentsError, match="m: 'y' is not of type 'integer'"):
        tool.validate({"n": "x", "m": "y"})
    # a pointer into the unfetched document cannot be followed: the server judges it all
    pointing = {"type": "object", "properties": {"n": {"$ref": f"{schema_host}/d.json#/a"}}}
    assert make_tool(pointing).validate({"n": "x"}) == {"n": "x"}
    assert _Counting.hits == []


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ('{"n": Infinity}', "Infinity is not a JSON number"),
        ('{"n": -Infinity}', "-Infinity is not a JSON number"),
        ('{"n": NaN}', "NaN is not a JSON number"),
        ('{"n": 1e999}', "1e999 is too large a number"),
        ({"n": float("inf")}, "NaN or Infinity is not a JSON number"),
        ({"n": [1.0, float("nan")]}, "NaN or Infinity is not a JSON number"),
    ],
)
def test_nan_and_infinity_are_not_json_numbers(arguments: Any, said: str) -> None:
    # Python's JSON reader takes them; jsonschema-rs then reads them as null, so a bound
    # without a `type` let them through, and the server got something other than a number
    tool = make_tool({"type": "object", "properties": {"n": {"maximum": 10}}})
    with pytest.raises(ToolArgumentsError, match=f"not valid JSON \\({said}\\)"):
        tool.validate(arguments)
    assert tool.validate('{"n": 1.5e0}') == {"n": 1.5}


@pytest.mark.parametrize(
    "declared",
    [
        "https://json-schema.org/draft-07/schema#",  # https: jsonschema takes the newest draft
        "https://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft/2019-09/schema#",
    ],
)
def test_the_fast_check_uses_the_draft_jsonschema_picked(declared: str) -> None:
    # jsonschema-rs read these `$schema` spellings as the older draft and skipped the `$ref`
    # sibling and `prefixItems` that jsonschema (on 2020-12) enforces: bad arguments got through
    schema = {
        "$schema": declared,
        "type": "object",
        "definitions": {"any": {}},
        "properties": {
            "name": {"$ref": "#/definitions/any", "type": "string"},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}]},
        },
    }
    tool = make_tool(schema)
    assert tool.validate({"name": "x", "pair": [1]}) == {"name": "x", "pair": [1]}
    with pytest.raises(ToolArgumentsError, match="name: 3 is not of type 'string'"):
        tool.validate({"name": 3})
    with pytest.raises(ToolArgumentsError, match="pair/0: 'a' is not of type 'integer'"):
        tool.validate({"pair": ["a"]})


def test_a_pattern_pythons_re_cannot_read_is_a_tool_error_not_a_crash() -> None:
    # `\p{L}` is ECMA-262 (what JSON Schema patterns are) but a bad escape for Python's `re`:
    # jsonschema raised `re.error` out of the call, which ended the agent's whole run
    schema = {"type": "object", "properties": {"word": {"type": "string", "pattern": r"^\p{L}+$"}}}
    tool = make_tool(schema)
    assert tool.validate({"word": "Straße"}) == {"word": "Straße"}
    with pytest.raises(ToolArgumentsError, match=r'word: "123" does not match'):
        tool.validate({"word": "123"})


def test_a_schema_naming_a_draft_jsonschema_does_not_know_is_read_as_the_newest() -> None:
    # no DeprecationWarning ("... will raise an error in the future"), which would one day fail
    # every toolset whose server writes such a `$schema`
    import warnings

    schema = {"$schema": "https://example.com/my-draft", "type": "object", "required": ["a"]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool = make_tool(schema)
    with pytest.raises(ToolArgumentsError, match="'a' is a required property"):
        tool.validate({})
