"""Remove API keys from an exception chain before it leaves promptimus.

Our own messages never quote a key, but the SDK's errors we chain (``__cause__``) can: a server
that quotes the rejected key in a 401 body puts it into the SDK error's message, ``body`` and
``response``, and every SDK error holds the request, whose ``Authorization`` header is the key.
``traceback.format_exception`` and ``logging.exception`` print each chained exception, and error
trackers read their attributes, so the whole chain is scrubbed in place: every text argument,
``message``, ``body``, ``doc`` (a ``JSONDecodeError``'s whole document), and the ``response`` /
``request`` objects are replaced by copies whose body, URL and headers no longer hold the key.
Status codes, request ids and headers without the key are kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["redact_secrets", "scrub_exception", "shown_url", "url_password"]

_MASK = "***"
_TEXT_ATTRIBUTES = ("message", "body", "doc", "msg", "server_message", "reason")


def url_password(url: str | None) -> str | None:
    """The password in ``url``'s user info (``http://user:password@host``), or None."""
    if not url:
        return None
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def shown_url(url: str | None) -> str | None:
    """``url`` with the password of its user info masked, fit for a repr or an error."""
    if not url or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return _MASK
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{name}:{_MASK}@{host}"))


def redact_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (an API key) replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, _MASK)
    return text


def _usable(secrets: Iterable[str]) -> tuple[str, ...]:
    return tuple(secret for secret in secrets if secret and len(secret) >= 4)


def _contains(value: Any, secrets: tuple[str, ...], depth: int = 0) -> bool:
    if isinstance(value, str):
        return any(secret in value for secret in secrets)
    if isinstance(value, bytes):
        return any(secret.encode() in value for secret in secrets)
    if depth > 32:
        return False
    if isinstance(value, dict):
        return any(
            _contains(key, secrets, depth + 1) or _contains(item, secrets, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list | tuple):
        return any(_contains(item, secrets, depth + 1) for item in value)
    return False


def _redacted(value: Any, secrets: tuple[str, ...], depth: int = 0) -> Any:
    """A copy of a JSON-like value with the secrets masked in every string (and bytes)."""
    if isinstance(value, str):
        return redact_secrets(value, secrets)
    if isinstance(value, bytes):
        for secret in secrets:
            value = value.replace(secret.encode(), _MASK.encode())
        return value
    if depth > 32:
        return value
    if isinstance(value, dict):
        return {
            _redacted(key, secrets, depth + 1): _redacted(item, secrets, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redacted(item, secrets, depth + 1) for item in value]
    if isinstance(value, tuple):
        return tuple(_redacted(item, secrets, depth + 1) for item in value)
    return value


def _clean_headers(headers: Any, secrets: tuple[str, ...], drop: tuple[str, ...] = ()) -> Any:
    return [
        (name, redact_secrets(value, secrets))
        for name, value in headers.items()
        if name.lower() not in drop
    ]


def _httpx_class(value: Any, name: str) -> type | None:
    """``type(value)`` if it is httpx's (or httpx2's, which the openai SDK uses) ``name``."""
    cls = type(value)
    package = cls.__module__.split(".", 1)[0]
    return cls if cls.__name__ == name and package in ("httpx", "httpx2") else None


def _clean_request(request: Any, secrets: tuple[str, ...]) -> Any:
    request_class = _httpx_class(request, "Request")
    if request_class is None:
        return request
    url = redact_secrets(str(request.url), secrets)
    return request_class(
        request.method, url, headers=_clean_headers(request.headers, secrets, ("content-length",))
    )


def _clean_response(response: Any, secrets: tuple[str, ...]) -> Any:
    response_class = _httpx_class(response, "Response")
    if response_class is None:
        return response
    try:
        content = response.content
    except Exception:  # a streamed response that was never read: keep nothing of it
        content = b""
    try:
        request = _clean_request(response.request, secrets)
    except RuntimeError:  # a response built without a request
        request = None
    # the content is already decoded, so its encoding and length headers no longer apply
    headers = _clean_headers(
        response.headers, secrets, ("content-length", "content-encoding", "transfer-encoding")
    )
    return response_class(
        response.status_code,
        headers=headers,
        content=_redacted(content, secrets),
        request=request,
    )


def _chain(error: BaseException) -> list[BaseException]:
    """Every exception reachable from ``error`` (causes, contexts, group members), once each."""
    seen: set[int] = set()
    found: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
        pending.extend(getattr(current, "exceptions", None) or ())
    return found


def _scrub_one(exc: BaseException, secrets: tuple[str, ...]) -> None:
    if _contains(exc.args, secrets):
        with contextlib.suppress(Exception):
            exc.args = _redacted(exc.args, secrets)
    for name in _TEXT_ATTRIBUTES:
        value = getattr(exc, name, None)
        if value is not None and _contains(value, secrets):
            with contextlib.suppress(Exception):
                setattr(exc, name, _redacted(value, secrets))
    notes = getattr(exc, "__notes__", None)
    if notes and _contains(notes, secrets):
        with contextlib.suppress(Exception):
            exc.__notes__ = _redacted(list(notes), secrets)
    # Every SDK error holds its request (the key is in its Authorization header), even when the
    # server never echoed it: replace both objects by clean copies.
    for name, clean in (("response", _clean_response), ("request", _clean_request)):
        try:
            value = getattr(exc, name, None)
        except Exception:  # httpx raises RuntimeError for a missing request
            continue
        if value is not None:
            with contextlib.suppress(Exception):
                setattr(exc, name, clean(value, secrets))


def scrub_exception(error: BaseException, secrets: Iterable[str]) -> BaseException:
    """Mask ``secrets`` everywhere in ``error``'s chain (in place); returns ``error``."""
    usable = _usable(secrets)
    if usable:
        for exc in _chain(error):
            _scrub_one(exc, usable)
    return error
