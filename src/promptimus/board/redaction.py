"""What the board never shows or writes: the values of secret environment variables (names
saying KEY, TOKEN, SECRET or PASSWORD), the passwords of URLs, and the keys the tracing encoder
was taught. `record()` writes runs through a `BoardEncoder`; the Conversations page shows stored
turns through one too, so a turn reads the same on both pages."""

from __future__ import annotations

import os
import re

from ..tracing.attribute_values import REDACTED, ValueEncoder

__all__ = ["BoardEncoder", "page_redactor", "secret_env_values"]

_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
# values of such variables that are settings, not secrets: redacting them would change every
# `false` or `3600` written (TOKENIZERS_PARALLELISM=false, SESSION_TOKEN_SECONDS=3600)
_NOT_SECRETS = frozenset({"true", "false", "yes", "no", "none", "null", "on", "off", "auto"})

# the password of a URL (`postgresql://user:password@host/db`): a database URL among a run's
# values (its deps, an error) is written without it. Each part is bounded, so a long run of
# letters cannot make the search quadratic.
_URL_PASSWORD = re.compile(
    r"([a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^:@/\s\"'\\]{0,256}:)([^@/\s\"'\\]{1,256})@"
)


def secret_env_values() -> list[str]:
    """The values of the environment variables whose names say KEY, TOKEN, SECRET or PASSWORD,
    but for flags and numbers."""
    return [
        value
        for name, value in os.environ.items()
        if _SECRET_ENV.search(name)
        and value.strip().lower() not in _NOT_SECRETS
        and not value.strip().isdigit()
    ]


class BoardEncoder(ValueEncoder):
    """The tracing encoder (known secrets redacted, long texts cut), also leaving out the
    passwords of URLs."""

    __slots__ = ()

    def redact(self, value: str) -> str:
        value = super().redact(value)
        if "://" in value and "@" in value:
            value = _URL_PASSWORD.sub(r"\1" + REDACTED + "@", value)
        return value


def page_redactor() -> BoardEncoder:
    """An encoder for one page: the secret environment variables as they are now."""
    encoder = BoardEncoder(1_000_000)
    encoder.add_secrets(secret_env_values())
    return encoder
