"""A real gunicorn serving the app (production settings) against a database the tests can read.

PostgreSQL: gunicorn uses pytest-django's own test database (tables are flushed after each
test, as TransactionTestCase would). SQLite: pytest-django's test database lives in memory
and cannot be shared with other processes, so the server gets a migrated SQLite file. Either
way the tests read what the server wrote through the extra connection alias `served`.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connections

from redteam.common.models import ApiKey, Operation, OperationMembership
from tests.access import TEST_OPERATIONS

REPO_ROOT = Path(__file__).resolve().parents[2]
ALIAS = "served"
# The clients talk plain HTTP to 127.0.0.1, as the TLS-terminating proxy in front would.
PROXY_HEADERS = {"X-Forwarded-Proto": "https", "Host": "127.0.0.1"}
STARTUP_LINE = "Booting worker"
# The served app's per-item string limit, small enough for a test body to go past it.
STRING_LIMIT = 4 * 1024 * 1024


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def served_database_url(db: dict[str, Any]) -> str:
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    auth = quote(db.get("USER") or "", safe="")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"], safe="")
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{auth}@{host}:{port}/{quote(db['NAME'], safe='')}"


@dataclass
class ServedApp:
    """A running gunicorn and the database alias holding what it wrote."""

    host: str
    port: int
    alias: str
    workers: int
    process: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def vendor(self) -> str:
        """ "postgresql" or "sqlite"."""
        return connections[self.alias].vendor

    def make_key(self, *scopes: str, username: str = "pusher") -> tuple[ApiKey, str]:
        """Create a user (if needed) and an API key in the served database."""
        users = get_user_model()._default_manager.db_manager(self.alias)
        user = users.filter(username=username).first() or users.create_user(username)
        api_key = ApiKey(name=username, user=user, scopes=list(scopes or ("ingest", "read")))
        key = ApiKey.objects.assign_key(api_key)
        operations = [
            Operation.objects.using(self.alias).get_or_create(name=name)[0]
            for name in TEST_OPERATIONS
        ]
        for operation in operations:
            OperationMembership.objects.using(self.alias).get_or_create(
                user=user, operation=operation, defaults={"role": "reviewer"}
            )
        api_key.default_operation = operations[0]
        api_key.save(using=self.alias)
        api_key.operations.add(*operations)
        return api_key, key

    def alive(self) -> bool:
        """True while the gunicorn master runs."""
        return self.process.poll() is None

    def flush(self) -> None:
        """Empty every table (and recreate content types/permissions), as after a test."""
        call_command("flush", database=self.alias, interactive=False, verbosity=0)


def gunicorn_env(database_url: str, media_root: Path, port: int, workers: int) -> dict[str, str]:
    """The environment gunicorn runs with: production settings on 127.0.0.1:`port`."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))},
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url,
        "MEDIA_ROOT": str(media_root),
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(workers),
        "GUNICORN_ACCESS_LOG": "",
        "GUNICORN_LOG_LEVEL": "info",
        "GUNICORN_TIMEOUT": "60",
        # Smaller than the 64 MiB default so the oversize-body fault test stays cheap; the
        # string limit (2 Mi characters) keeps its default.
        "REDTEAM_MAX_BODY_BYTES": str(16 * 1024 * 1024),
        "REDTEAM_MAX_STRING_CHARS": str(STRING_LIMIT),
        "LOG_LEVEL": "WARNING",
        # Pages render {% static %} through the manifest: collect once into the session's
        # folder so page requests (tests/reliability/test_bounded_work_served.py) can render.
        "STATIC_ROOT": str(media_root.parent / "static"),
    }


def launch_gunicorn(
    env: dict[str, str], port: int, workers: int, *, new_session: bool = False
) -> ServedApp:
    """Start gunicorn with `env` and return once every worker booted (`new_session`: in its
    own process group, so a test can kill the master and its workers at once)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "redteam.wsgi:application",
            "-c",
            "python:redteam.gunicorn_conf",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=new_session,
    )
    app = ServedApp("127.0.0.1", port, ALIAS, workers, process)
    assert process.stderr is not None
    # gunicorn logs "Booting worker" once per worker after the socket listens; reading its log
    # (blocking) is the readiness signal, so there is no polling loop and no sleep.
    booted = 0
    for line in process.stderr:
        app.log.append(line)
        if STARTUP_LINE in line:
            booted += 1
            if booted == workers:
                break
    else:
        raise RuntimeError("gunicorn exited during start-up:\n" + "".join(app.log))

    def drain() -> None:  # keep the pipe empty, keep the log for failure messages
        assert process.stderr is not None
        for line in process.stderr:
            app.log.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return app


def _start_gunicorn(database_url: str, media_root: Path, workers: int) -> ServedApp:
    port = free_port()
    env = gunicorn_env(database_url, media_root, port, workers)
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=REPO_ROOT,
        env=env,
        check=True,
    )
    return launch_gunicorn(env, port, workers)


def _register(db: dict[str, Any]) -> None:
    connections.settings[ALIAS] = db


def _unregister() -> None:
    if ALIAS in connections.settings:
        connections[ALIAS].close()
        del connections[ALIAS]
        del connections.settings[ALIAS]


@pytest.fixture(scope="session")
def served_app(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedApp]:
    """gunicorn (production settings, several workers) on a free 127.0.0.1 port."""
    base = tmp_path_factory.mktemp("served")
    default = dict(connections["default"].settings_dict)
    db = dict(default)
    sqlite = default["ENGINE"] == "django.db.backends.sqlite3"
    if sqlite:
        db["NAME"] = str(base / "served.sqlite3")
        db["TEST"] = {**default.get("TEST", {}), "NAME": db["NAME"]}
        with django_db_blocker.unblock():
            _register(db)
            try:
                call_command("migrate", database=ALIAS, verbosity=0)
            finally:
                _unregister()
    # On PostgreSQL `db` names the test database pytest-django created (test_<name>).
    app = _start_gunicorn(served_database_url(db), base / "media", workers=3 if sqlite else 4)
    app.settings = db
    try:
        yield app
    finally:
        app.process.terminate()
        try:
            app.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            app.process.kill()
            app.process.wait()


@pytest.fixture
def served(served_app: ServedApp, transactional_db: None) -> Iterator[ServedApp]:
    """The running server and, as alias `served`, its database; emptied after the test.

    The alias is registered only for the test's duration: Django's test cases block every
    alias a test does not declare, and this one is not in settings.DATABASES. Connecting it
    explicitly (connect() is not among the blocked methods of an alias registered after the
    test case set up) gets past the block on opening connections lazily.
    """
    _register(served_app.settings)
    connections[ALIAS].connect()
    try:
        yield served_app
    finally:
        if served_app.vendor == "sqlite":
            served_app.flush()  # on PostgreSQL, transactional_db flushes the same database
        _unregister()
