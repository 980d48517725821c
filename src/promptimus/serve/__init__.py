"""Serving a module over HTTP (`promptimus serve`, the `promptimus[serve]` extra).

    from promptimus.serve import app

    asgi = app(agent, store=SQLiteSessionStore("chats.db"), tokens={"s3cret-token": "alice"})

One event stream inside (the agent's `stream()`); each protocol is a thin translation of it at
the edge: OpenAI-compatible chat completions (`promptimus.serve.openai_chat`), AG-UI
(`promptimus.serve.ag_ui`), A2A 1.0 (`promptimus.serve.a2a`), and the chat page at `/`, which
streams through the AG-UI endpoint. A conversation
id is scoped by its caller, so two callers never share a conversation by naming the same id.
Importing this package imports Starlette: it is imported only where serving is used.
"""

from __future__ import annotations

from .application import app
from .callers import read_tokens_file

__all__ = ["app", "read_tokens_file"]
