"""Fixtures for the security tests: every role, and a small memory of real PyRIT rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from redteam.common.models import ApiKey, OperationRole
from tests.access import bind_everywhere, grant_everywhere
from tests.api.pyrit_fixtures import SCENARIO_FIXTURES

# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@dataclass
class Roles:
    """Users and API keys for each role of the access matrix."""

    keys: dict[str, str]  # role -> API key secret
    users: dict[str, Any]  # role -> user (session roles)


@pytest.fixture
def roles(db: None) -> Roles:
    """anonymous, read-only key, ingest-only key, revoked key, and session users by role.

    Keys are bound to every operation of the test (their owner a reviewer there), members hold
    their role in every operation (tests.access), so each row the matrix names is visible to
    every role that may read at all: a 404 never stands in for a refusal. `norole_user` is a
    member of nothing; `staff` is a superuser.
    """
    users_model = get_user_model()
    owner = users_model.objects.create_user("key-owner")
    read_key, read_secret = ApiKey.objects.create_key(name="r", user=owner, scopes=["read"])
    ingest_key, ingest_secret = ApiKey.objects.create_key(name="i", user=owner, scopes=["ingest"])
    revoked, revoked_secret = ApiKey.objects.create_key(
        name="x", user=owner, scopes=["ingest", "read"]
    )
    for key in (read_key, ingest_key, revoked):
        bind_everywhere(key, OperationRole.REVIEWER)
    revoked.revoked = True
    revoked.save()
    keys = {"read_key": read_secret, "ingest_key": ingest_secret, "revoked_key": revoked_secret}
    users: dict[str, Any] = {"norole_user": users_model.objects.create_user("norole")}
    for name, role in (
        ("readonly_user", OperationRole.READ_ONLY),
        ("reviewer", OperationRole.REVIEWER),
        ("adjudicator", OperationRole.ADJUDICATOR),
        ("lead", OperationRole.LEAD),
    ):
        users[name] = users_model.objects.create_user(name)
        grant_everywhere(users[name], role)
    users["staff"] = users_model.objects.create_superuser("staff", "staff@example.org", "pw")
    return Roles(keys=keys, users=users)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@dataclass
class Memory:
    """Ids of stored rows, to fill URL parameters with objects that exist."""

    conversation_id: str
    attack_result_id: str
    objective_sha256: str
    piece_id: str
    score_id: str
    identifier_hash: str
    media_sha256: str
    seed_id: str
    dataset_pk: int
    scenario_id: str
    content_id: str


@pytest.fixture
def memory(db: None, fixtures_dir: Path) -> Memory:
    """PyRIT 1.1's real run, ingested through the services, plus one media blob."""
    from memory.models import (
        AttackResult,
        ComponentIdentifier,
        MessagePiece,
        ScenarioResult,
        ScorableContent,
        Score,
    )
    from redteam.common.media import store_media_bytes
    from redteam.site.ingest import ingest_batch
    from seeds.models import Seed, SeedDataset

    base = fixtures_dir / "pyrit-1.1"
    report = ingest_batch(
        {
            "conversations": _jsonl(base / "conversations.jsonl"),
            "message_pieces": _jsonl(base / "pieces.jsonl"),
            "scores": _jsonl(base / "scores.jsonl"),
            "attack_results": _jsonl(base / "attack_results.jsonl"),
            "seeds": _jsonl(base / "seeds.jsonl"),
            "scenario_results": _jsonl(SCENARIO_FIXTURES / "scenario_results.jsonl"),
        }
    )
    loose = ingest_batch(
        {"scores": _jsonl(SCENARIO_FIXTURES / "loose_scores_before_storage.jsonl")}
    )
    assert loose.errors == 0
    assert report.errors == 0, [o for o in report.outcomes if o.status == "rejected"][:3]
    blob = store_media_bytes(PNG, filename="x.png")
    result = AttackResult.objects.order_by("pk").first()
    assert result is not None
    seed = Seed.objects.exclude(dataset=None).order_by("pk").first() or Seed.objects.first()
    assert seed is not None
    dataset = SeedDataset.objects.order_by("pk").first()
    if dataset is None:
        dataset = SeedDataset.objects.create(dataset_name="matrix")
    return Memory(
        conversation_id=str(result.conversation_id),
        attack_result_id=str(result.attack_result_id),
        objective_sha256=result.objective_sha256,
        piece_id=str(MessagePiece.objects.order_by("pk").values_list("pk", flat=True)[0]),
        score_id=str(Score.objects.order_by("pk").values_list("pk", flat=True)[0]),
        identifier_hash=ComponentIdentifier.objects.order_by("pk").values_list("pk", flat=True)[0],
        media_sha256=blob.sha256,
        seed_id=str(seed.pk),
        dataset_pk=dataset.pk,
        scenario_id=str(ScenarioResult.objects.order_by("pk").values_list("pk", flat=True)[0]),
        content_id=str(ScorableContent.objects.order_by("pk").values_list("pk", flat=True)[0]),
    )
