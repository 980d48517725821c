"""The addresses of the server stores, read once when a store is made: checked, split into what
the driver may see and log (the address without its password) and the secrets handed to it
apart, and shown with the password masked.

A driver that misreads an address quotes it back: libpq reads `postgresql://app:pa/ss@db/app` as
the host `app` on the port `pa`, names a malformed `%` escape with the text around it, and its
connection pool logs those messages as WARNING lines. So an address the driver would misread is
refused here with `InvalidStoreAddress`, whose message says what to fix without quoting it, and
the password never travels inside the connection string the driver logs.
"""

from __future__ import annotations

import logging
import re
import weakref
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from ..errors import InvalidStoreAddress

__all__ = ["ServerAddress", "mask_secrets_in_logs", "postgres_address", "redis_address"]

_SECRET_KEYS = frozenset({"password", "sslpassword"})
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ENCODE_HINT = (
    "percent-encode the password's special characters (/ as %2F, # as %23, ? as %3F, @ as %40, "
    "% as %25, a space as %20)"
)


@dataclass(frozen=True)
class ServerAddress:
    """An address as the store uses it: `conninfo` holds no secret (the driver may log it),
    `secrets` are passed to the driver as keyword arguments, `shown` masks them."""

    conninfo: str
    secrets: dict[str, str] = field(default_factory=dict)
    shown: str = ""

    def redact(self, text: str) -> str:
        """`text` with every secret of this address (as given and percent-encoded) masked."""
        for secret in self.secrets.values():
            for form in {secret, quote(secret, safe="")}:
                if form:
                    text = text.replace(form, "***")
        return text


def postgres_address(url: object, owner: str = "PostgresSessionStore") -> ServerAddress:
    """`url` (a `postgresql://` URL or a libpq `key=value` string), checked and split."""
    text = _text(url, owner)
    if re.match(r"(?i)postgres(ql)?://", text):
        return _url_address(text, owner)
    return _keyword_address(text, owner)


def redis_address(url: object, owner: str = "RedisSessionStore") -> ServerAddress:
    """`url` (`redis://`, `rediss://` or `unix://`), checked as redis-py would read it."""
    text = _text(url, owner)
    if not re.match(r"(?i)(rediss?|unix)://", text):
        raise InvalidStoreAddress(
            f"{owner}(url=...) must start with redis://, rediss:// or unix:// "
            "(redis://[[user]:password@]host:port/db)."
        )
    address = _url_address(text, owner)
    parts = urlsplit(address.conninfo)
    try:
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:
        raise InvalidStoreAddress(
            f"{owner}(url=...): the port is not a number; if the password holds a '/', '?' "
            f"or '#', {_ENCODE_HINT}."
        ) from None
    database = parts.path.lstrip("/")
    if parts.scheme.lower() != "unix" and database and not database.isdigit():
        raise InvalidStoreAddress(
            f"{owner}(url=...): the database after the host must be a number (redis://host:6379/0)."
        )
    return address


def _text(url: object, owner: str) -> str:
    if not isinstance(url, str):
        raise InvalidStoreAddress(f"{owner}(url=...) must be text, got {type(url).__name__}.")
    if "\x00" in url:
        raise InvalidStoreAddress(f"{owner}(url=...) must not contain a NUL character.")
    return url


def _url_address(url: str, owner: str) -> ServerAddress:
    if _BAD_ESCAPE.search(url):
        raise InvalidStoreAddress(
            f"{owner}(url=...) holds a '%' that does not start a %XX escape: {_ENCODE_HINT}."
        )
    scheme, _, rest = url.partition("://")
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            end = min(end, found)
    authority, tail = rest[:end], rest[end:]
    if "@" in tail or "#" in tail:
        raise InvalidStoreAddress(
            f"{owner}(url=...) is misread as it stands (a '/', '?' or '#' before the '@'): "
            f"{_ENCODE_HINT}."
        )
    if authority.count("@") > 1:
        raise InvalidStoreAddress(f"{owner}(url=...) holds more than one '@': {_ENCODE_HINT}.")
    userinfo, at, hosts = authority.rpartition("@")
    user, colon, password = userinfo.partition(":")
    secrets: dict[str, str] = {}
    try:
        if colon and password:
            secrets["password"] = unquote(password, errors="strict")
        path, question, query = tail.partition("?")
        kept: list[tuple[str, str]] = []
        shown_query: list[tuple[str, str]] = []
        for key, value in parse_qsl(query, keep_blank_values=True, errors="strict"):
            if key.lower() in _SECRET_KEYS:
                secrets[key.lower()] = value
                shown_query.append((key, "***"))
            else:
                kept.append((key, value))
                shown_query.append((key, value))
    except (UnicodeDecodeError, ValueError):
        raise InvalidStoreAddress(
            f"{owner}(url=...) holds a %XX escape that is not UTF-8 text: {_ENCODE_HINT}."
        ) from None
    login = f"{user}@" if at else ""
    shown_login = f"{user}:***@" if colon else login
    conninfo = f"{scheme}://{login}{hosts}{path}" + (f"?{urlencode(kept)}" if kept else "")
    shown = f"{scheme}://{shown_login}{hosts}{path}"
    if question:
        shown += f"?{urlencode(shown_query, safe='*')}"
    return ServerAddress(conninfo, secrets, shown)


def _keyword_address(text: str, owner: str) -> ServerAddress:
    """A libpq `key=value ...` string (values may be single-quoted, with `\\'` and `\\\\`)."""
    pairs = _keyword_pairs(text, owner)
    secrets = {key: value for key, value in pairs if key in _SECRET_KEYS}
    public = [(key, value) for key, value in pairs if key not in _SECRET_KEYS]
    conninfo = " ".join(f"{key}={_quoted(value)}" for key, value in public)
    shown = " ".join(
        f"{key}=***" if key in _SECRET_KEYS else f"{key}={_quoted(value)}" for key, value in pairs
    )
    return ServerAddress(conninfo, secrets, shown)


def _keyword_pairs(text: str, owner: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    position, size = 0, len(text)
    while True:
        while position < size and text[position].isspace():
            position += 1
        if position == size:
            return pairs
        match = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*").match(text, position)
        if match is None:
            raise InvalidStoreAddress(
                f"{owner}(url=...) is neither a postgresql:// URL nor libpq key=value pairs "
                "(host=... dbname=... user=... password=...)."
            )
        key, position = match.group(1).lower(), match.end()
        value, position = _keyword_value(text, position, owner)
        pairs.append((key, value))


def _keyword_value(text: str, position: int, owner: str) -> tuple[str, int]:
    quoted = position < len(text) and text[position] == "'"
    if quoted:
        position += 1
    value: list[str] = []
    while position < len(text):
        char = text[position]
        if char == "\\" and position + 1 < len(text):
            value.append(text[position + 1])
            position += 2
            continue
        if (quoted and char == "'") or (not quoted and char.isspace()):
            return "".join(value), position + (1 if quoted else 0)
        value.append(char)
        position += 1
    if quoted:
        raise InvalidStoreAddress(
            f"{owner}(url=...) has a quoted value without its closing quote: close it, and "
            "write a quote inside a value as \\'."
        )
    return "".join(value), position


def _quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


class _MaskSecrets(logging.Filter):
    """Masks, in a driver's log records, the secrets of every live store that registered."""

    def __init__(self) -> None:
        super().__init__()
        self.addresses: weakref.WeakSet[_Registered] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        addresses = list(self.addresses)
        if not addresses:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: the logging module reports it itself
            return True
        masked = message
        for holder in addresses:
            masked = holder.address.redact(masked)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


class _Registered:
    __slots__ = ("__weakref__", "address")

    def __init__(self, address: ServerAddress) -> None:
        self.address = address


_filters: dict[str, _MaskSecrets] = {}


def mask_secrets_in_logs(address: ServerAddress, *logger_names: str) -> object:
    """Mask `address`'s secrets in the records of the loggers `logger_names` (a driver's) for as
    long as the returned handle is kept (the store keeps it)."""
    holder = _Registered(address)
    if not address.secrets:
        return holder
    for name in logger_names:
        mask = _filters.get(name)
        if mask is None:
            mask = _filters[name] = _MaskSecrets()
            logging.getLogger(name).addFilter(mask)
        mask.addresses.add(holder)
    return holder
