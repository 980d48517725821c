"""`MCPToolset`: the tools of one MCP server, for agents, over one reused client session.

    async with MCPToolset.stdio("python", ["server.py"], prefix="files_") as files:
        agent = OpenaiToolCallingAgent(prompt, tools=[files, my_tool])
        await agent.forward("...")

The connection (transport + `ClientSession`) lives in one background task that owns the SDK's
context managers from start to end, so every call, from any task, goes through the same
session: stateful servers keep their state.

If the server goes away, what happens to a call depends on what happened to its request, never
on timing. A request that was never delivered (the connection was already closed, the write to
a stdio server's stdin failed because the server had exited, the HTTP POST could not connect,
or the HTTP server answered that it no longer knows our session) is sent again over one fresh
connection (if reconnecting fails, `MCPError` names the server). A request that may have been
delivered (written, then the connection died) may have run: the call fails with
`MCPResultUnknown` (a tool error the model sees) instead of running a tool twice, and the next
call reconnects first. A tool marked idempotent (safe to run twice: the server's
`idempotentHint` or `readOnlyHint` annotation, or `MCPToolset(idempotent=...)`) is sent again
in that case too, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sys
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as SDKError

from ..errors import MCPError, MCPResultUnknown, ToolExecutionError
from ..tools.settings import check_timeout
from .delivery import Attempt, DeliveryWatch, Replies, ReplyWatch, attempt_var, http_client
from .mcp_tool import MCPTool
from .stderr_log import StderrLog
from .stdio_pipe import stdio_pipe

__all__ = ["DEFAULT_MCP_TIMEOUT", "MCPToolset"]

log = logging.getLogger("promptimus.mcp")

DEFAULT_MCP_TIMEOUT = 60.0
"""Seconds one tool call may take before it becomes a tool error for the model."""

_CONNECT_TIMEOUT = 30.0
_CLOSE_TIMEOUT = 10.0
_RELIST_QUIET = 0.05  # seconds without a list-changed notice before the list is read again
_RELIST_WAIT = 1.0  # ... but no longer than this after the first notice


class MCPToolset:
    """The tools of one MCP server. Build with `MCPToolset.stdio(...)` or `MCPToolset.http(...)`,
    open with `async with`, then give it to an agent wherever tools are taken.

    `include=`/`exclude=` filter the server's tools by their own names; `prefix=` is put before
    every name the model sees (to avoid clashes); `timeout=` bounds each call (seconds, default
    60): past it the model gets a tool error; `name=` is what run records, agent events and
    tracing spans call the server (default: the name the server gives itself when the session
    opens, else its command line or URL); `images=False` keeps images out of the results (only
    named in the text) for models without vision (see `promptimus.mcp.mcp_tool`);
    `idempotent=` says which tools may be sent again when a call's outcome is unknown: True
    (all), False (none), or the server's names of those that may (default None: each tool's
    `idempotentHint` / `readOnlyHint` annotation). `include=`, `exclude=` and `idempotent=`
    take one name as a string, or any collection of names.

    When the server says its tool list changed, the list is read again (notices that arrive
    while it is being read make one more reading, not one each); a tool the server dropped is
    no longer offered, and one named in `include=` that it dropped is logged as a warning.
    """

    def __init__(
        self,
        server: str,
        *,
        stdio: StdioServerParameters | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        prefix: str = "",
        timeout: float | None = DEFAULT_MCP_TIMEOUT,
        name: str | None = None,
        images: bool = True,
        idempotent: bool | Iterable[str] | None = None,
    ) -> None:
        if (stdio is None) == (url is None):
            raise MCPError("MCPToolset needs a server: use MCPToolset.stdio(...) or .http(url).")
        if prefix and not re.fullmatch(r"[a-zA-Z0-9_-]+", prefix):
            raise MCPError(f"MCP prefix {prefix!r} may hold only letters, digits, '_' and '-'.")
        self.server = server
        self._given_name = name
        self.images = images
        self.name = name or server
        self._stdio = stdio
        self._url = url
        self._headers = dict(headers or {})
        self.include = _names(include, "include") if include is not None else None
        self.exclude = _names(exclude or (), "exclude")
        self.prefix = prefix
        self.idempotent = (
            idempotent
            if idempotent is None or isinstance(idempotent, bool)
            else _names(idempotent, "idempotent")
        )
        self.timeout = check_timeout(timeout, "MCPToolset timeout")
        self._session: ClientSession | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._stderr: StderrLog | None = None
        self._tools: dict[str, MCPTool] = {}
        self._reconnect_lock: asyncio.Lock | None = None
        self._generation = 0
        self._stale_generation = -1  # a connection that lost a call mid-way: replace it first
        self._background: set[asyncio.Task[None]] = set()
        self.tools_version = 0
        """Grows each time the tool list is read anew: agents compare it at every step."""
        self.refreshing: asyncio.Task[None] | None = None
        """The re-listing the server's list-changed notices started, while it runs."""
        self._relist = False  # a notice came in since the running re-listing began

    # ------------------------------------------------------------------ construction

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        **options: Any,
    ) -> MCPToolset:
        """A server started as a subprocess, spoken to over its stdin/stdout. Its stderr goes
        to the `promptimus.mcp.server_stderr` logger."""
        params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env else None, cwd=cwd
        )
        return cls(_shown_command(command, args), stdio=params, **options)

    @classmethod
    def http(cls, url: str, headers: Mapping[str, str] | None = None, **options: Any) -> MCPToolset:
        """A server reached over streamable HTTP at `url` (e.g. `http://127.0.0.1:8000/mcp`)."""
        return cls(_shown_url(url), url=url, headers=headers, **options)

    def __repr__(self) -> str:
        state = "open" if self._session is not None else "closed"
        return f"MCPToolset({self.server!r}, {state}, tools={list(self._tools)})"

    # ------------------------------------------------------------------ lifetime

    async def __aenter__(self) -> MCPToolset:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Start (or reach) the server, open one client session and list its tools."""
        if self._session is not None:
            return
        self._reconnect_lock = asyncio.Lock()
        await self._connect()
        try:
            await self.refresh()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """End the session (and stop a stdio server). Waits a bounded time."""
        runner, stop = self._runner, self._stop
        self._session = self._runner = self._stop = None
        if runner is None or stop is None:
            return
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(runner), _CLOSE_TIMEOUT)
        except (TimeoutError, Exception):
            runner.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(runner, _CLOSE_TIMEOUT)
        finally:
            if self._stderr is not None:
                self._stderr.close()

    async def _connect(self) -> None:
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._stop = stop = asyncio.Event()
        if self._stdio is not None:
            self._stderr = StderrLog(self.server)
        self._runner = asyncio.create_task(self._run(ready, stop), name=f"mcp:{self.server}")
        try:
            self._session = await asyncio.wait_for(asyncio.shield(ready), _CONNECT_TIMEOUT)
        except BaseException as exc:
            stop.set()
            self._runner.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._runner, _CLOSE_TIMEOUT)
            self._session = self._runner = self._stop = None
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise MCPError(self._start_failure(exc)) from exc
        if self._given_name is None:
            info = self._session.server_info
            self.name = (info.name if info is not None else None) or self.server
        self._generation += 1

    def _start_failure(self, exc: BaseException) -> str:
        cause = _describe(exc)
        if isinstance(exc, TimeoutError):
            cause = f"no answer within {_CONNECT_TIMEOUT:g} s"
        if self._stdio is not None:
            tail = self._stderr.tail() if self._stderr is not None else ""
            said = f" Its stderr ended with:\n{tail}" if tail else " It wrote nothing to stderr."
            return (
                f"Could not start the MCP server {self.server!r} ({cause}). Check that the "
                f"command runs on its own in a terminal.{said}"
            )
        return (
            f"Could not connect to the MCP server at {self.server} ({cause}). Check that it is "
            "running and that the URL ends with its MCP path (often /mcp)."
        )

    async def _run(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        """Own the transport and the session for their whole life (anyio needs one task)."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self._stdio is not None:
                    assert self._stderr is not None
                    connect = stdio_client if sys.platform == "win32" else stdio_pipe
                    streams = await stack.enter_async_context(
                        connect(self._stdio, errlog=self._stderr.writer)
                    )
                else:
                    assert self._url is not None
                    client = await stack.enter_async_context(http_client(self._headers))
                    streams = await stack.enter_async_context(
                        streamable_http_client(self._url, http_client=client)
                    )
                replies = Replies()
                read = ReplyWatch(streams[0], replies)
                write = DeliveryWatch(streams[1], replies)
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._on_message)
                )
                await session.initialize()
                ready.set_result(session)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else MCPError(repr(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _on_message(self, message: Any) -> None:
        """Refresh the tool list when the server says it changed."""
        method = getattr(getattr(message, "root", message), "method", None)
        if method != "notifications/tools/list_changed":
            return
        self._relist = True
        if self.refreshing is not None and not self.refreshing.done():
            return  # the running re-listing reads the list once more when it is done
        task = asyncio.get_running_loop().create_task(self._refresh_quietly())
        self._background.add(task)  # keep a reference until it ends
        task.add_done_callback(self._background.discard)
        self.refreshing = task

    async def _refresh_quietly(self) -> None:
        """Read the list until no notice came in during a reading, each time once the notices
        have stopped for a moment (`_RELIST_QUIET`, waiting at most `_RELIST_WAIT`): a burst
        of notices makes a few readings, not one each. A failure is logged (the list the
        server last gave stays, less any tool it dropped)."""
        loop = asyncio.get_running_loop()
        while self._relist and self._session is not None:
            first = loop.time()
            while self._relist and loop.time() - first < _RELIST_WAIT:
                self._relist = False
                await asyncio.sleep(_RELIST_QUIET)
            self._relist = False
            try:
                await self.refresh()
            except Exception as exc:
                log.warning("MCP server %r: the tool list was not read again: %s", self.name, exc)

    # ------------------------------------------------------------------ tools

    async def refresh(self) -> None:
        """List the server's tools again (done on open and on its list-changed notice). Agents
        given this toolset offer the new list from their next step on."""
        session = self._open_session()
        try:
            listed = await asyncio.wait_for(session.list_tools(), _CONNECT_TIMEOUT)
        except Exception as exc:
            raise MCPError(
                f"The MCP server {self.server!r} did not list its tools: {_describe(exc)}"
            ) from exc
        tools: dict[str, MCPTool] = {}
        for spec in listed.tools:
            if self.include is not None and spec.name not in self.include:
                continue
            if spec.name in self.exclude:
                continue
            existing = self._tools.get(self.prefix + spec.name)
            if existing is not None and existing.remote_name == spec.name:
                existing.update(spec.description, spec.input_schema)
                tools[existing.name] = existing
            else:
                tool = MCPTool(
                    self,
                    spec.name,
                    spec.description,
                    spec.input_schema,
                    self.prefix,
                    self._idempotent(spec),
                )
                tools[tool.name] = tool
        missing = (self.include or frozenset()) - {t.remote_name for t in tools.values()}
        if missing and self.tools_version:  # a tool it had is gone: never offer it again
            self._tools = tools
            self.tools_version += 1
        if missing:
            raise MCPError(
                f"The MCP server {self.server!r} has no tool named {sorted(missing)} (include=). "
                f"It has: {', '.join(sorted(t.name for t in listed.tools)) or 'no tools'}."
            )
        self._tools = tools
        self.tools_version += 1

    def _idempotent(self, spec: Any) -> bool:
        """Whether the server's tool `spec` may be sent again when a call's outcome is unknown."""
        if isinstance(self.idempotent, bool):
            return self.idempotent
        if self.idempotent is not None:
            return spec.name in self.idempotent
        hints = spec.annotations
        return bool(hints is not None and (hints.idempotent_hint or hints.read_only_hint))

    def expand_tools(self) -> list[MCPTool]:
        """The tools, for an agent (the `ToolSource` seam of `promptimus.tools.toolset`)."""
        self._open_session()
        return list(self._tools.values())

    @property
    def tools(self) -> dict[str, MCPTool]:
        """Name (as the model sees it) -> tool."""
        self._open_session()
        return dict(self._tools)

    def tool(self, name: str) -> MCPTool:
        """One tool by the name the model sees (with the prefix)."""
        tools = self.tools
        if name not in tools:
            raise MCPError(
                f"The MCP server {self.server!r} has no tool {name!r}. "
                f"It has: {', '.join(tools) or 'no tools'}."
            )
        return tools[name]

    def _open_session(self) -> ClientSession:
        if self._session is None:
            raise MCPError(
                f"The MCP toolset for {self.server!r} is not open: use `async with toolset:` "
                "(or `await toolset.open()`) before giving it to an agent or calling its tools."
            )
        return self._session

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self, remote_name: str, arguments: dict[str, Any], *, idempotent: bool = False
    ) -> Any:
        """Call a tool on the server. A call whose request never reached the server is sent
        again once after reconnecting; one cut off after sending raises `MCPResultUnknown`,
        unless `idempotent` (then it too is sent again once).

        One frame for both attempts (not a helper per attempt): each await of the call resumes
        every frame above the SDK's, and this is the hot path of every MCP tool call."""
        if self._generation == self._stale_generation:
            await self._reconnect(self._generation, None)
        first: BaseException | None = None
        while True:
            session = self._open_session()
            generation = self._generation
            attempt = Attempt()
            token = attempt_var.set(attempt)
            try:
                return await session.call_tool(remote_name, arguments)
            except Exception as exc:
                if not _session_gone(exc, attempt):
                    if isinstance(exc, SDKError):
                        raise self._refused(remote_name, exc) from exc
                    raise
                if attempt.settle is not None:
                    await attempt.settle()
                unknown = attempt.maybe_delivered and not attempt.session_unknown
                if unknown and (first is not None or not idempotent):
                    self._stale_generation = generation
                    again = (
                        "it was sent again once (the tool is idempotent) and that call was lost too"
                        if first is not None
                        else "it was not called again, in case it is not safe to repeat (a "
                        "tool safe to run twice can be marked so: MCPToolset(idempotent=[...]))"
                    )
                    raise MCPResultUnknown(
                        f"The connection to the MCP server {self.server!r} was lost during the "
                        f"call to its tool {remote_name!r} ({_describe(exc)}), so whether the "
                        f"tool ran is unknown; {again}. Check its effect before calling it "
                        "again; the next call reconnects."
                    ) from exc
                if first is not None:  # the request surely never reached the server, twice
                    self._stale_generation = self._generation
                    raise MCPError(
                        f"The MCP server {self.server!r} went away and did not answer after "
                        f"reconnecting: {_describe(exc)}"
                    ) from exc
                first = exc
            finally:
                attempt_var.reset(token)
            await self._reconnect(generation, first)

    def _refused(self, remote_name: str, exc: SDKError) -> ToolExecutionError:
        """The server answered the call with a JSON-RPC error (e.g. invalid parameters): a tool
        error the model can react to, not a crash of the run."""
        return ToolExecutionError(
            f"Tool {remote_name!r} (MCP server {self.server!r}) was refused: "
            f"{exc.error.message or 'no reason given'}"
        )

    async def _reconnect(self, generation: int, cause: BaseException | None) -> None:
        assert self._reconnect_lock is not None
        async with self._reconnect_lock:
            if self._generation != generation:  # another call reconnected already
                return
            await self.close()
            try:
                await self._connect()
            except MCPError as exc:
                why = f" ({_describe(cause)})" if cause is not None else ""
                raise MCPError(
                    f"The MCP server {self.server!r} went away{why} and reconnecting failed: {exc}"
                ) from exc


def _session_gone(exc: BaseException, attempt: Attempt) -> bool:
    """Whether a failed call means the connection or the server's session is gone (worth one
    reconnect), rather than the server answering with an error: told by what happened to the
    call's reply (see `promptimus.mcp.delivery`), never by the error's code or text."""
    if isinstance(exc, TimeoutError):
        return False
    if isinstance(exc, SDKError):
        return attempt.lost
    return True


def _names(value: str | Iterable[str], option: str) -> frozenset[str]:
    """The tool names an option gives: one string is one name."""
    if isinstance(value, str):
        return frozenset({value})
    names = frozenset(value)
    wrong = [name for name in names if not isinstance(name, str)]
    if wrong:
        raise MCPError(f"MCPToolset({option}=...) takes tool names (strings); got {wrong[0]!r}.")
    return names


_SECRET_NAME = re.compile(r"token|key|secret|passw|pwd|auth|credential|bearer|cookie", re.I)
_TOKEN_LIKE = re.compile(r"(?=[^/\\\s]*\d)(?=[^/\\\s]*[A-Za-z])[A-Za-z0-9_~+=:.-]{16,}")


def _shown_command(command: str, args: Sequence[str]) -> str:
    """A server's command line as errors, reprs and records show it: a value given to an
    option named like a secret (``--token X``, ``--api-key=X``, ``API_KEY=X``) and any
    argument that looks like a key (16 or more letters and digits, not a file) is masked."""
    shown = [command]
    hide_next = False
    for arg in args:
        name, equals, _ = arg.partition("=")
        if hide_next:
            shown.append("***")
        elif equals and _SECRET_NAME.search(name):
            shown.append(f"{name}=***")
        elif _TOKEN_LIKE.fullmatch(arg) and not os.path.exists(arg):
            shown.append("***")
        else:
            shown.append(arg)
        hide_next = not hide_next and arg.startswith("-") and not equals
        hide_next = hide_next and bool(_SECRET_NAME.search(arg))
    return " ".join(shown)


def _shown_url(url: str) -> str:
    """`url` as errors, reprs and the model may see it: hosted servers often take their key in
    the query or the user info, so query values and the user info are masked."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    if "@" in parts.netloc:
        netloc = "***@" + netloc
    query = "&".join(
        f"{key}=***" for key, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _describe(exc: BaseException) -> str:
    """One line for an exception, looking inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
