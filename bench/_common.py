"""What the benchmarks share: the scratch database and the synthetic vocabulary."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    import psycopg

ROOT = Path(__file__).resolve().parent.parent
# Run as `python bench/<script>.py`: the project's pure modules (memory.shapes) are importable.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/bench"
WORDS = [
    "lock",
    "pin",
    "tumbler",
    "plug",
    "spring",
    "key",
    "shear",
    "line",
    "tension",
    "wrench",
    "rake",
    "pick",
    "security",
    "door",
    "cylinder",
    "bypass",
    "explain",
    "how",
    "to",
    "the",
    "a",
    "of",
    "and",
    "with",
    "without",
    "tool",
    "attack",
    "model",
    "target",
]


def _scratch(url: str) -> tuple[str, str]:
    """(the server's `postgres` database URL, the scratch database's name) for `url`; refuses
    a database whose name does not start with "bench"."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name.startswith("bench"):
        raise SystemExit(
            f"Refusing to drop or recreate {name!r}: a bench database's name starts with 'bench'."
        )
    return urlunsplit(parts._replace(path="/postgres")), name


def _drop(conn: psycopg.Connection[Any], name: str, *others: str) -> None:
    """End the sessions on database `name` (and on `others`), then drop `name` if it exists."""
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ANY(%s)",
        ([name, *others],),
    )
    conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def recreate_database(url: str, template: str | None = None) -> None:
    """Drop and create the scratch database named in `url` (refuses other names); with
    `template`, as a file copy of that database (whose sessions are ended first)."""
    import psycopg  # only the benchmarks need it

    admin, name = _scratch(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        _drop(conn, name, *([template] if template else []))
        if template:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
        else:
            conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    """Drop the scratch database named in `url` if it exists (refuses other names)."""
    import psycopg

    admin, name = _scratch(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        _drop(conn, name)


def django_on_scratch_database(script: str) -> None:
    """Recreate the scratch PostgreSQL database (DATABASE_URL, default DEFAULT_URL), set up
    Django against it and migrate: the start of every benchmark that drives the app itself."""
    database_url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    if not database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit(f"{script} needs PostgreSQL (DATABASE_URL=postgres://...)")
    recreate_database(database_url)
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DEBUG", "1")  # static files without a manifest; logging off
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "redteam.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


SERVER_SETTINGS = (
    "shared_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "wal_compression",
    "autovacuum",
)


def describe_server(url: str) -> str:
    """One line naming the machine and the PostgreSQL settings that bound a large table's
    write rate (docs/sizing.md), printed with every figure so a table says what it ran on."""
    import psycopg

    with psycopg.connect(url) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        settings = [
            f"{name} {conn.execute(f'SHOW {name}').fetchone()[0]}"  # type: ignore[index]
            for name in SERVER_SETTINGS
        ]
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    return (
        f"{os.cpu_count()} CPUs, {ram:.0f} GB RAM; PostgreSQL {version[0] if version else '?'}, "
        + ", ".join(settings)
    )


def shared_buffers_bytes(url: str) -> int:
    """PostgreSQL's shared_buffers, in bytes."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT setting::bigint * pg_size_bytes(unit) FROM pg_settings "
            "WHERE name = 'shared_buffers'"
        ).fetchone()
    return int(row[0]) if row else 0


if __name__ == "__main__":
    # `python bench/_common.py drop URL...`: what `make bench` runs at the end, so that its
    # 10M-piece databases (about 13 GB each) do not stay behind.
    if sys.argv[1:2] != ["drop"]:
        raise SystemExit("usage: python bench/_common.py drop DATABASE_URL...")
    for scratch_url in sys.argv[2:]:
        drop_database(scratch_url)
        print(f"dropped {urlsplit(scratch_url).path.lstrip('/')}")
