"""One ingestion path: the API, `import_pyrit_memory` and `load_demo` store through
redteam.site.ingest.ingest_batch, so the same items give the same rows and outcomes on every
path, the per-item JSON guard runs once per item on each, and every service gets the sender.

Each path runs inside a savepoint that is rolled back afterwards, so the three are compared on
the same starting database: one piece made hostile (nesting past the guard's limit) and one
score already stored with other content (a conflict) make the outcomes worth comparing.
"""

from __future__ import annotations

import inspect
import io
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import models, transaction
from rest_framework.test import APIClient

from redteam import client as redteam_client
from redteam.core.outcomes import ItemOutcome
from redteam.site import ingest
from redteam.site.demo import DemoData
from redteam.site.management.commands import load_demo
from redteam.site.pyrit_sqlite import import_pyrit_memory
from seeds.models import Seed, SeedDataset, SeedGroup
from tests.api.pyrit_fixtures import SCENARIO_FIXTURES

pytestmark = pytest.mark.django_db

MEMORY_FILES = {
    "pyrit-1.1": Path("pyrit-1.1") / "pyrit_memory.sqlite",
    "pyrit-0.13": Path("pyrit-0.13") / "pyrit_memory.sqlite",
    "scenario": SCENARIO_FIXTURES / "pyrit_memory.sqlite",
}
DEEP = 100  # past REDTEAM_MAX_JSON_DEPTH (64)
SEED_NATURAL_KEYS: dict[type[models.Model], str] = {
    SeedGroup: "prompt_group_id",
    SeedDataset: "name",
}
Outcome = tuple[str, int, str | None, str, list[dict[str, str | None]]]


class _Undo(Exception):
    """Rolls a path's savepoint back."""


def _hostile_copy(source: Path, target: Path) -> Path:
    """A copy of a memory file whose first piece carries metadata nested DEEP levels."""
    shutil.copyfile(source, target)
    deep = '{"k": ' * DEEP + "1" + "}" * DEEP
    with sqlite3.connect(target) as conn:
        conn.execute(
            'UPDATE "PromptMemoryEntries" SET prompt_metadata = ? '
            'WHERE rowid = (SELECT min(rowid) FROM "PromptMemoryEntries")',
            (deep,),
        )
    conn.close()
    return target


def _payload(path: Path) -> dict[str, list[dict[str, Any]]]:
    """What the importer sends for this file, as one payload (the reader's own dicts)."""
    with redteam_client.PyritMemoryFile(path) as memory:
        return {
            spec.kind: [item for chunk in memory.items(spec, chunk_size=100_000) for item in chunk]
            for spec in memory.specs()
        }


def _fields(model: type[models.Model]) -> list[str]:
    """A model's stored values that do not depend on when or by whom a row was written."""
    names = []
    for f in model._meta.concrete_fields:
        if isinstance(f, models.AutoField | models.BigAutoField):
            continue
        if isinstance(f, models.DateTimeField) and (f.auto_now or f.auto_now_add):
            continue
        if f.name in ("updated_at", "reviewer", "uploaded_by"):
            continue
        related = f.related_model if f.is_relation else None
        if isinstance(related, type) and related in SEED_NATURAL_KEYS:
            names.append(f"{f.name}__{SEED_NATURAL_KEYS[related]}")
        else:
            names.append(f.attname)
    return names


def _snapshot() -> dict[str, list[str]]:
    """Every memory row and every seed, group and dataset, comparable across paths."""
    tables: list[type[models.Model]] = [
        *apps.get_app_config("memory").get_models(),
        Seed,
        SeedGroup,
        SeedDataset,
    ]
    return {
        model.__name__: sorted(
            repr(sorted(row.items())) for row in model._default_manager.values(*cols)
        )
        for model in tables
        if (cols := _fields(model))
    }


@contextmanager
def _recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[Outcome], list[Any]]]:
    """Record every outcome ingest_batch answers and every item the guard checks."""
    outcomes: list[Outcome] = []
    guarded: list[Any] = []
    real_store, real_guard = ingest.store_items, ingest.guard_error

    def store(kind: str, items: list[Any], *, writer: Any) -> list[ItemOutcome]:
        answer = real_store(kind, items, writer=writer)
        outcomes.extend(
            (o.kind, o.index, o.id, o.status, [e.as_dict() for e in o.errors]) for o in answer
        )
        return answer

    def guard(item: Any, field: str | None = None) -> Any:
        guarded.append(item)
        return real_guard(item, field)

    with monkeypatch.context() as patch:
        patch.setattr(ingest, "store_items", store)
        patch.setattr(ingest, "guard_error", guard)
        yield outcomes, guarded


def _run(
    path: Callable[[], None], payload: Mapping[str, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Outcome], dict[str, list[str]]]:
    """Run one path in a savepoint: its outcomes and rows; the guard saw each item once."""
    conflicting = json.loads(json.dumps(payload["scores"][0]))
    conflicting["score_rationale"] = "stored before with other content"
    result: tuple[list[Outcome], dict[str, list[str]]] | None = None
    try:
        with transaction.atomic():
            assert ingest.ingest_batch({"scores": [conflicting]}).stored == 1
            with _recording(monkeypatch) as (outcomes, guarded):
                path()
            items = [item for items in payload.values() for item in items]
            assert sorted(map(_text, guarded)) == sorted(map(_text, items))
            result = (sorted(outcomes, key=lambda o: (o[0], o[1])), _snapshot())
            raise _Undo
    except _Undo:
        pass
    assert result is not None
    return result


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("name", MEMORY_FILES)
def test_api_import_and_load_demo_store_the_same_rows_and_outcomes(
    name: str,
    fixtures_dir: Path,
    tmp_path: Path,
    api: APIClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = MEMORY_FILES[name]
    memory_file = _hostile_copy(
        source if source.is_absolute() else fixtures_dir / source, tmp_path / "memory.sqlite"
    )
    payload = _payload(memory_file)
    body = json.dumps(payload)

    def by_api() -> None:
        response = api.post("/api/v1/ingest/", body, content_type="application/json")
        assert response.status_code == 207  # the hostile piece and the conflicting score

    def by_import() -> None:
        report = import_pyrit_memory(memory_file, chunk_size=100_000, media=False)
        assert report.rejected >= 2

    def by_load_demo() -> None:
        monkeypatch.setattr(load_demo, "build_demo_data", DemoData)
        monkeypatch.setattr(load_demo, "demo_payload", lambda _: json.loads(body))
        call_command(
            "load_demo",
            "--no-fixtures",
            "--no-reviews",
            "--password",
            "x" * 16,
            stdout=io.StringIO(),
        )

    api_outcomes, api_rows = _run(by_api, payload, monkeypatch)
    import_outcomes, import_rows = _run(by_import, payload, monkeypatch)
    demo_outcomes, demo_rows = _run(by_load_demo, payload, monkeypatch)

    first_errors = [(o[0], o[4][0]) for o in api_outcomes if o[3] == "rejected"]
    assert any(
        kind == "message_pieces" and "nested more than 64 levels" in str(error["message"])
        for kind, error in first_errors
    )
    assert any(kind == "scores" and error["code"] == "conflict" for kind, error in first_errors)
    assert import_outcomes == api_outcomes
    assert demo_outcomes == api_outcomes
    assert demo_rows == api_rows
    # The importer also stores the file's identifier tables (from their identifier_json),
    # which no ingest payload carries: those rows come on top of the same rows.
    for table in ("ComponentIdentifier", "IdentifierDump"):
        assert set(api_rows.pop(table)) <= set(import_rows.pop(table))
    assert import_rows == api_rows


def test_every_service_takes_the_items_and_the_sender_the_same_way() -> None:
    for kind, store in ingest.INGEST_SERVICES.items():
        params = inspect.signature(store).parameters
        assert list(params) == ["items", "writer"], kind
        assert params["writer"].kind is inspect.Parameter.KEYWORD_ONLY, kind
        assert params["writer"].default is None, kind


def test_ingest_batch_hands_the_sender_to_every_service(
    monkeypatch: pytest.MonkeyPatch, django_user_model: Any
) -> None:
    sender = django_user_model.objects.create_user("sender")
    seen: dict[str, Any] = {}

    def fake(kind: str) -> Callable[..., list[ItemOutcome]]:
        def store(items: Sequence[Mapping[str, Any]], *, writer: Any = None) -> list[ItemOutcome]:
            seen[kind] = writer.user
            return [ItemOutcome(kind, i, None, "stored") for i, _ in enumerate(items)]

        return store

    for kind in ingest.INGEST_KINDS:
        monkeypatch.setitem(ingest.INGEST_SERVICES, kind, fake(kind))
    report = ingest.ingest_batch(
        {kind: [{"id": kind}] for kind in ingest.INGEST_KINDS}, user=sender
    )
    assert report.ok
    assert seen == dict.fromkeys(ingest.INGEST_KINDS, sender)


def test_the_client_sends_and_the_importer_stores_in_the_servers_order(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert redteam_client.KINDS == ingest.INGEST_KINDS
    # Whatever order the reader lists its tables in, the importer stores in INGEST_KINDS order.
    real_specs = redteam_client.PyritMemoryFile.specs
    monkeypatch.setattr(
        redteam_client.PyritMemoryFile, "specs", lambda self: list(reversed(real_specs(self)))
    )
    with _recording(monkeypatch) as (outcomes, _):
        import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite", media=False)
    kinds = list(dict.fromkeys(o[0] for o in outcomes))
    assert kinds == [k for k in ingest.INGEST_KINDS if k in kinds]
    assert len(kinds) >= 4
