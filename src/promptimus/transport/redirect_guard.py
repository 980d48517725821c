"""Keep credentials on their server: refuse a redirect that leaves the request's origin.

The SDKs follow redirects, and httpx drops only ``Authorization`` when one changes host: an
``x-api-key`` (Anthropic) or ``x-goog-api-key`` (Gemini) header, or a key in the query, would
go to whichever server the redirect names. Every provider's HTTP client gets the response hook
below; it raises `CrossOriginRedirect` before the next request is built, so nothing is sent to
the other origin, and the retry layer raises that error as it is (the same request would be
redirected the same way). A redirect within the origin (``/v1`` to ``/v1/``) is followed.
"""

from __future__ import annotations

from typing import Any

from promptimus.errors import CrossOriginRedirect

__all__ = ["guard_redirects", "refused_redirect"]


def _origin(url: Any) -> tuple[str, str, int | None]:
    scheme = str(url.scheme).lower()
    default = {"http": 80, "https": 443}.get(scheme)
    return scheme, str(url.host).lower(), url.port or default


def _shown(url: Any) -> str:
    """``scheme://host:port`` of an httpx URL: no user, password, path or query."""
    scheme, host, port = _origin(url)
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


async def _refuse_cross_origin(response: Any) -> None:
    if not response.has_redirect_location:
        return
    source = response.request.url
    try:
        target = source.join(response.headers["location"])
    except Exception:  # a Location httpx cannot read: it raises its own error on following it
        return
    if _origin(target) != _origin(source):
        raise CrossOriginRedirect(_shown(source), _shown(target), response.status_code)


def guard_redirects(http_client: Any) -> Any:
    """``http_client`` (an httpx ``AsyncClient``) with the cross-origin check among its
    response hooks (added once); returns the client."""
    hooks = http_client.event_hooks
    responses = list(hooks.get("response", ()))
    if _refuse_cross_origin not in responses:
        hooks["response"] = [_refuse_cross_origin, *responses]
        http_client.event_hooks = hooks
    return http_client


def refused_redirect(exc: BaseException) -> CrossOriginRedirect | None:
    """The `CrossOriginRedirect` behind ``exc`` (an SDK wraps what its HTTP client raised,
    e.g. in ``APIConnectionError``), or None."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, CrossOriginRedirect):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
