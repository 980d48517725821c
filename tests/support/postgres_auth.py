"""A PostgreSQL user that must sign in with a password, on the test run's server (which trusts
every local connection otherwise): `pg_hba.conf` gets a rule for that one user, put first, and
loses it afterwards."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class PasswordUser:
    name: str
    password: str
    socket_folder: str  # where the server's unix socket is
    database: str


@contextlib.contextmanager
def password_user(server: Any, database_url: str, name: str, password: str) -> Iterator[Any]:
    """`name` (new: a name no other test uses) may sign in to `database_url`'s database with
    `password` only, while inside."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(server.url, autocommit=True) as admin:
        hba = Path(admin.execute("SHOW hba_file").fetchone()[0])  # type: ignore[index]
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(name), sql.Literal(password)
            )
        )
        original = hba.read_text()
        rules = f"local all {name} scram-sha-256\nhost all {name} 127.0.0.1/32 scram-sha-256\n"
        hba.write_text(rules + original)
        admin.execute("SELECT pg_reload_conf()")
        parts = urlsplit(database_url)
        folder = parse_qs(parts.query)["host"][0]
        database = parts.path.lstrip("/")
        admin.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(database), sql.Identifier(name)
            )
        )
        try:
            yield PasswordUser(name, password, folder, database)
        finally:
            # the role stays (it owns what it made in the test's database): names are unique
            hba.write_text(original)
            admin.execute("SELECT pg_reload_conf()")
