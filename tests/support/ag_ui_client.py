"""An AG-UI client for tests: posts a `RunAgentInput` to a served app's `/ag-ui` and reads the
server-sent events back, each one parsed and validated with `ag-ui-protocol`'s models."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from ag_ui.core import BaseEvent, Event, RunErrorEvent
from pydantic import TypeAdapter

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
TIMEOUT = 60.0  # a hang guard, not a speed check


@dataclass
class Answer:
    """What one request got: its status, its events (validated), or the error body of a
    refused request (a RUN_ERROR, validated)."""

    status: int
    events: list[BaseEvent] = field(default_factory=list)
    error: RunErrorEvent | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def types(self) -> list[str]:
        return [str(event.type.value) for event in self.events]

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    def text(self, subagent: str | None = None) -> str:
        """The text messages' content (the main agent's, or one subagent run's)."""
        return "".join(
            event.delta
            for event in self.events
            if event.type.value == "TEXT_MESSAGE_CONTENT"
            and getattr(event, "subagent_run_id", None) == subagent
        )


def user(text: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "content": text}


def run_input(thread: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": list(messages), **extra}


def parse_sse(body: str) -> list[BaseEvent]:
    events: list[BaseEvent] = []
    for block in body.split("\n\n"):
        data = [
            line[len("data:") :].strip() for line in block.splitlines() if line.startswith("data:")
        ]
        if data:
            events.append(EVENTS.validate_json("\n".join(data)))
    return events


def post(
    url: str,
    body: dict[str, Any] | bytes,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    sent = {"content-type": "application/json", **(headers or {})}
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    options: dict[str, Any] = {"content": body} if isinstance(body, bytes) else {"json": body}
    reply = httpx.post(f"{url}/ag-ui", headers=sent, timeout=TIMEOUT, **options)
    answer = Answer(reply.status_code, headers=dict(reply.headers))
    if reply.status_code == 200:
        assert reply.headers["content-type"].startswith("text/event-stream")
        answer.events = parse_sse(reply.text)
    else:
        assert "Traceback" not in reply.text
        answer.error = RunErrorEvent.model_validate_json(reply.text)
    return answer
