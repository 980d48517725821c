"""What every endpoint shares: the module, its callers, its conversations and its limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from ..core.module import Module
from ..core.session import Session
from ..errors import InvalidSessionId
from .callers import Callers, scoped_id
from .conversations import Conversations
from .refusal import Refused
from .request_body import read_json
from .served_run import RunSlots

__all__ = ["Served"]


@dataclass
class Served:
    module: Module
    name: str
    description: str
    callers: Callers
    store: Any
    slots: RunSlots
    max_body_bytes: int
    conversations: Conversations
    body_timeout: float

    def caller(self, request: Request) -> str:
        """The user the request's token names; `Refused` 401 when it names nobody."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else None
        given = given or request.headers.get("x-api-key")
        user = self.callers.user(given)
        if user is None:
            raise Refused(
                401,
                "This server needs a token: send it as `Authorization: Bearer TOKEN` (the "
                "openai SDK's api_key).",
                "invalid_api_key",
            )
        return user

    async def body(self, request: Request) -> Any:
        return await read_json(request, self.max_body_bytes, self.body_timeout)

    def session(self, user: str, conversation: str | None) -> Session:
        """`user`'s conversation `conversation` (kept in the store, or in this process without
        one, the least recently used forgotten past `max_conversations`); a fresh conversation of
        its own for None."""
        if conversation is None:
            return Session(None)
        try:
            key = scoped_id(user, conversation)
        except InvalidSessionId as exc:
            raise Refused(400, f"Bad conversation id: {exc}", "invalid_conversation_id") from None
        if self.store is not None:
            return Session(key, store=self.store)
        return self.conversations.get(key)
