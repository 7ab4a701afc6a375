"""Scored loose content: one row however it arrives, and no conflict between its forms."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from memory.models import ScorableContent, Score
from redteam.site.ingest import ingest_batch
from redteam.site.pyrit_sqlite import import_pyrit_memory
from tests.api.pyrit_fixtures import SCENARIO_FIXTURES, read_jsonl

pytestmark = pytest.mark.django_db

BEFORE = "loose_scores_before_storage.jsonl"  # {"scorable_type": "content", value inline}
AFTER = "loose_scores_after_storage.jsonl"  # {"scorable_type": "content_entry", content_id}
ENTRIES = "loose_score_entries.jsonl"  # ScoreEntry.to_dict(): + scorable_content_id


def rows(name: str) -> list[dict[str, Any]]:
    return read_jsonl(SCENARIO_FIXTURES / name)


def statuses(scores: list[dict[str, Any]]) -> list[str]:
    report = ingest_batch({"scores": scores})
    return [
        o.status + "".join(f" {e.field}: {e.message}" for e in o.errors) for o in report.outcomes
    ]


def content_rows() -> list[tuple[Any, ...]]:
    return sorted(ScorableContent.objects.values_list("id", "value", "value_sha256", "data_type"))


def score_links() -> list[tuple[Any, ...]]:
    return sorted(Score.objects.values_list("id", "loose_content_id"))


def test_inline_content_is_stored_once_per_distinct_text_and_linked() -> None:
    assert statuses(rows(BEFORE)) == ["stored"] * 3
    values = [value for _, value, _, _ in content_rows()]
    assert sorted(values) == sorted({s["scorable"]["value"] for s in rows(BEFORE)})
    assert Score.objects.filter(loose_content__isnull=True).count() == 0


def test_push_and_import_derive_identical_content_rows() -> None:
    ingest_batch({"scores": rows(BEFORE)})
    pushed, pushed_links = content_rows(), score_links()
    Score.objects.all().delete()
    ScorableContent.objects.all().delete()
    report = import_pyrit_memory(SCENARIO_FIXTURES / "pyrit_memory.sqlite")
    assert report.rejected == 0, report.errors
    assert content_rows() == pushed
    assert [link for link in score_links() if link[1] is not None] == pushed_links


def test_loose_content_score_imported_after_push_is_unchanged() -> None:
    assert statuses(rows(BEFORE)) == ["stored"] * 3
    report = import_pyrit_memory(SCENARIO_FIXTURES / "pyrit_memory.sqlite")
    assert report.rejected == 0, report.errors
    assert report.tables["ScoreEntries"].unchanged >= 3
    # Every form PyRIT gives of these scores is the same score.
    assert statuses(rows(AFTER)) == ["unchanged"] * 3
    assert statuses(rows(ENTRIES)) == ["unchanged"] * 3
    assert len(content_rows()) == 2


def test_stored_forms_first_then_inline_content_is_unchanged() -> None:
    assert statuses(rows(ENTRIES)) == ["stored"] * 3
    assert Score.objects.get(pk=rows(ENTRIES)[0]["id"]).scorable_content_id is not None
    assert statuses(rows(BEFORE)) == ["unchanged"] * 3


def test_other_content_under_the_same_score_id_is_a_conflict() -> None:
    ingest_batch({"scores": rows(BEFORE)})
    changed = copy.deepcopy(rows(BEFORE)[0])
    changed["scorable"]["value"] = "something else"
    [status] = statuses([changed])
    assert status.startswith("rejected scorable")


def test_entry_row_must_name_the_scorables_content() -> None:
    entry = copy.deepcopy(rows(AFTER)[0])
    entry["scorable_content"] = {
        "id": "00000000-0000-4000-8000-000000000001",
        "value": "x",
        "value_sha256": None,
        "data_type": "text",
        "timestamp": "2026-11-22T05:00:00Z",
    }
    [status] = statuses([entry])
    assert status.startswith("rejected scorable_content.id")


def test_scorable_content_id_must_match_the_scorable() -> None:
    entry = copy.deepcopy(rows(ENTRIES)[0])
    entry["scorable_content_id"] = "00000000-0000-4000-8000-000000000001"
    [status] = statuses([entry])
    assert status.startswith("rejected scorable_content_id")


def test_message_scorable_scores_have_no_loose_content(fixtures_dir: Any) -> None:
    scores = read_jsonl(fixtures_dir / "pyrit-1.1" / "scores.jsonl")
    ingest_batch({"scores": scores})
    assert not ScorableContent.objects.exists()


def _loose_scores(count: int, tag: str) -> list[dict[str, Any]]:
    """``count`` inline loose-content scores, each over its own text."""
    template = rows(BEFORE)[0]
    out = []
    for n in range(count):
        score = copy.deepcopy(template)
        score["id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"loose-{tag}-{n}"))
        score["scorable"]["value"] = f"loose text {tag} {n}"
        out.append(score)
    return out


def test_loose_content_scores_cost_constant_queries(django_assert_max_num_queries: Any) -> None:
    ingest_batch({"scores": _loose_scores(3, "warm")})
    with django_assert_max_num_queries(40) as three:
        assert ingest_batch({"scores": _loose_scores(3, "a")}).ok
    with django_assert_max_num_queries(40) as thirty:
        assert ingest_batch({"scores": _loose_scores(30, "b")}).ok
    assert len(thirty.captured_queries) == len(three.captured_queries)
