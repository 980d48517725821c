"""The chat page at `/` as a person uses it, in a real Chromium (Debian's, driven by Playwright),
against a served agent under a real uvicorn: a message shows its answer while the run still
goes, a tool call shows its arguments, progress and result, a call waiting for approval shows
Approve and Deny and goes on when approved, a token is asked for and kept in the tab; the page
runs no inline script and asks nothing of another host."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from board_support import Console, chromium_page
from serve_support import Running, serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole, ToolRequest
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.tools import RunContext, Tool

WAIT_MS = 60_000  # a hang guard, not a speed check


def calling(name: str, arguments: str, text: str = "", call_id: str = "c1") -> Message:
    """A model reply that says `text` and calls `name`."""
    call = ToolRequest.model_validate(
        {"id": call_id, "function": {"name": name, "arguments": arguments}}
    )
    return Message(role=MessageRole.ASSISTANT, content=text, tool_calls=[call])


class Requests:
    """Every URL the page asked for."""

    def __init__(self, page: Any) -> None:
        self.urls: list[str] = []
        page.on("request", lambda request: self.urls.append(request.url))

    def others(self, running: Running) -> list[str]:
        return [u for u in self.urls if not u.startswith(running.url + "/")]


@pytest.fixture
def browser() -> Iterator[tuple[Any, Console]]:
    with chromium_page() as opened:
        yield opened


def say(page: Any, text: str) -> None:
    page.fill("#message", text)
    page.click("#send")


def test_the_answer_shows_while_the_run_goes_with_the_tool_call(
    browser: tuple[Any, Console],
) -> None:
    gate = threading.Event()

    async def crawl(ctx: RunContext[Any], pages: int) -> str:
        """Reads some pages."""
        ctx.progress(f"page 1 of {pages}", fraction=0.5)
        while not gate.is_set():  # noqa: ASYNC110 - set from the test's thread
            await asyncio.sleep(0.01)
        return f"read {pages} pages"

    llm = ScriptedLLM(
        [calling("crawl", '{"pages": 2}', "Let me read them."), "Both pages say hello."]
    )
    agent = OpenaiToolCallingAgent("You read.", [Tool(crawl)]).with_llm(llm)
    page, console = browser
    with serving(app(agent, name="reader")) as running:
        requests = Requests(page)
        page.goto(running.url + "/")
        assert page.title() == "reader · promptimus"
        say(page, "read two pages")
        assert page.locator(".bubble.user").inner_text() == "read two pages"
        # the run is held inside the tool: what streamed so far is already shown
        first = page.locator(".bubble.assistant").first
        first.wait_for(timeout=WAIT_MS)
        page.wait_for_function(
            "document.querySelector('.progress-message')?.textContent === 'page 1 of 2'",
            timeout=WAIT_MS,
        )
        assert first.inner_text() == "Let me read them."
        card = page.locator("details.tool")
        assert card.locator(".tool-name").inner_text() == "crawl"
        assert card.locator(".args").inner_text() == '{\n  "pages": 2\n}'
        assert card.locator(".tool-state").inner_text() == "running"
        assert card.locator("progress").get_attribute("value") == "0.5"
        assert card.locator(".result").inner_text() == ""
        gate.set()
        page.wait_for_selector("text=Both pages say hello.", timeout=WAIT_MS)
        assert card.locator(".result").inner_text() == "read 2 pages"
        assert card.locator(".tool-state").inner_text() == "done"
        assert not page.locator(".note.error").count()
        # the next message continues the same conversation (its thread is kept in the tab)
        assert requests.others(running) == []
    assert console.errors == []


def test_an_approval_shows_approve_and_deny_and_approving_continues(
    browser: tuple[Any, Console],
) -> None:
    booked: list[str] = []

    def book(room: str) -> str:
        """Books a room."""
        booked.append(room)
        return f"booked {room}"

    def after_tool(history: list[Message], kwargs: dict[str, Any]) -> str:
        return "Done: " + history[-1].content

    llm = ScriptedLLM([calling("book", '{"room": "blue"}'), after_tool])
    agent = OpenaiToolCallingAgent("You book.", [Tool(book, requires_approval=True)])
    agent.with_llm(llm)
    page, console = browser
    with serving(app(agent)) as running:
        page.goto(running.url + "/")
        say(page, "book the blue room")
        approval = page.locator(".approval")
        approval.wait_for(timeout=WAIT_MS)
        assert approval.locator("button").all_inner_texts() == ["Approve", "Deny"]
        assert '"room": "blue"' in approval.locator(".args").inner_text()
        assert page.locator("details.tool .tool-state").inner_text() == "waiting for approval"
        assert booked == []
        approval.locator("button.approve").click()
        page.wait_for_selector("text=Done: booked blue", timeout=WAIT_MS)
        assert booked == ["blue"]
        assert page.locator("details.tool .result").inner_text() == "booked blue"
        assert approval.locator("button.approve").is_disabled()
    assert console.errors == []


def test_denying_tells_the_model_and_runs_nothing(browser: tuple[Any, Console]) -> None:
    booked: list[str] = []

    def book(room: str) -> str:
        """Books a room."""
        booked.append(room)
        return f"booked {room}"

    def after_tool(history: list[Message], kwargs: dict[str, Any]) -> str:
        return "Understood: " + history[-1].content

    llm = ScriptedLLM([calling("book", '{"room": "red"}'), after_tool])
    agent = OpenaiToolCallingAgent("You book.", [Tool(book, requires_approval=True)])
    agent.with_llm(llm)
    page, console = browser
    with serving(app(agent)) as running:
        page.goto(running.url + "/")
        say(page, "book the red room")
        page.locator(".approval button.deny").click(timeout=WAIT_MS)
        page.wait_for_selector(".bubble.assistant >> text=Understood", timeout=WAIT_MS)
        assert booked == []
    assert console.errors == []


def test_a_token_is_asked_for_kept_in_the_tab_and_sent(browser: tuple[Any, Console]) -> None:
    agent = OpenaiToolCallingAgent("You greet.").with_llm(ScriptedLLM(["Hello, Alice."] * 3))
    page, console = browser
    with serving(app(agent, tokens={"alice-token-123": "alice"}, name="secret-name")) as running:
        page.goto(running.url + "/")
        assert "secret-name" not in page.content()  # only a caller with a token learns it
        assert page.locator("#token-form").is_visible()
        page.fill("#token", "wrong-token-000")
        page.click("#token-form button")
        say(page, "hi")
        page.wait_for_selector(".note.error", timeout=WAIT_MS)
        assert "token" in page.locator(".note.error").inner_text()
        assert page.locator("#token-form").is_visible()  # asked again
        page.fill("#token", "alice-token-123")
        page.click("#token-form button")
        say(page, "hi again")
        page.wait_for_selector("text=Hello, Alice.", timeout=WAIT_MS)
        stored = page.evaluate("sessionStorage.getItem('promptimus.chat.token')")
        assert stored == "alice-token-123"
        assert page.evaluate("document.cookie") == ""
    assert [e for e in console.errors if "401" not in e] == []


def test_the_page_runs_no_inline_script_and_asks_no_other_host(
    browser: tuple[Any, Console],
) -> None:
    agent = OpenaiToolCallingAgent("You answer.").with_llm(
        ScriptedLLM(['<img src="https://evil.example/x.png" onerror="alert(1)"> done'])
    )
    page, console = browser
    with serving(app(agent, board_url="http://127.0.0.1:9/")) as running:
        answer = httpx.get(running.url + "/")
        csp = answer.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "connect-src 'self'" in csp
        html = answer.text
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []  # no inline script
        assert re.search(r"\son[a-z]+=", html) is None  # no inline handlers
        requests = Requests(page)
        page.goto(running.url + "/")
        say(page, "show me markup")
        page.wait_for_selector(".board-link", timeout=WAIT_MS)
        shown = page.locator(".bubble.assistant").inner_text()
        assert shown.startswith('<img src="https://evil.example/x.png"')  # text, not markup
        assert page.locator("main img").count() == 0
        link = page.locator(".board-link").get_attribute("href")
        assert link == "http://127.0.0.1:9/runs?q=show%20me%20markup"
        assert requests.others(running) == []
    assert console.errors == []


@pytest.mark.parametrize(
    "bad", ["javascript:alert(1)", "127.0.0.1:8321", 'http://x/"onmouseover="', 8321, b"http://x"]
)
def test_board_url_is_checked_where_given(bad: Any) -> None:
    from promptimus.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="board_url"):
        app(OpenaiToolCallingAgent("You answer."), board_url=bad)
