"""Who is calling: a token names a user, and a conversation id is scoped by that user.

Without tokens every request is the one local user (the server then listens on 127.0.0.1
only). With tokens, a request must carry one (`Authorization: Bearer TOKEN`, or `x-api-key`)
and is the user it names. Two users naming the same conversation id get two conversations:
the store keeps each under its owner's scoped id.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path

from ..core.session import check_session_id
from ..errors import InvalidArgument

__all__ = ["LOCAL_USER", "Callers", "read_tokens_file", "scoped_id"]

LOCAL_USER = "local"


class Callers:
    """The tokens a server accepts, each naming its user (None: one local user, no token)."""

    __slots__ = ("_tokens",)

    def __init__(self, tokens: Mapping[str, str] | None) -> None:
        if tokens is not None and not isinstance(tokens, Mapping):
            raise InvalidArgument(
                f"tokens= takes a mapping of token to user name, got {type(tokens).__name__}; "
                'e.g. tokens={"s3cret-token": "alice"}.'
            )
        checked: dict[str, str] = {}
        for token, user in (tokens or {}).items():
            if not isinstance(token, str) or len(token) < 8 or token != token.strip():
                raise InvalidArgument(
                    "Each token must be text of at least 8 characters without surrounding "
                    "spaces (secrets.token_urlsafe() makes a good one)."
                )
            if not isinstance(user, str) or not user or user != user.strip():
                raise InvalidArgument(
                    "Each token must name its user: a non-empty name without surrounding spaces."
                )
            checked[token] = user
        self._tokens = checked or None

    @property
    def required(self) -> bool:
        return self._tokens is not None

    def user(self, given: str | None) -> str | None:
        """The user `given` (the token a request carries) names; None when it names nobody."""
        if self._tokens is None:
            return LOCAL_USER
        if not given:
            return None
        found = None
        for token, user in self._tokens.items():  # compare every one: no timing tells which
            if hmac.compare_digest(token.encode(), given.encode()):
                found = user
        return found

    def __repr__(self) -> str:  # never the tokens themselves
        count = 0 if self._tokens is None else len(self._tokens)
        return f"Callers({count} tokens)"


def read_tokens_file(path: str | Path) -> dict[str, str]:
    """The tokens in a file of `TOKEN USER` lines (blank lines and `#` comments skipped)."""
    tokens: dict[str, str] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(
            f"Cannot read the tokens file {path}: {type(exc).__name__}."
        ) from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise InvalidArgument(
                f"{path}, line {number}: write one `TOKEN USER` pair per line (two words)."
            )
        token, user = parts
        if token in tokens:
            raise InvalidArgument(f"{path}, line {number}: this token is already given above.")
        tokens[token] = user
    if not tokens:
        raise InvalidArgument(f"{path} holds no `TOKEN USER` line.")
    return tokens


def scoped_id(user: str, conversation: str) -> str:
    """The store id of `user`'s conversation `conversation`: the user's name and its length
    first, so no (user, id) pair can spell another pair's id."""
    return check_session_id(f"{len(user)}:{user}:{conversation}")
