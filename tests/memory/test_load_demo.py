"""`manage.py load_demo`: demo login and roles, fixtures and synthetic data, idempotent."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from memory.models import AttackResult, Conversation, MessagePiece, Score
from redteam.common.access import user_scope
from redteam.common.models import MediaBlob, Operation, OperationMembership, OperationRole

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


def test_synthetic_demo_covers_every_kind_and_reloads_as_unchanged(settings: object) -> None:
    settings.DEBUG = True  # type: ignore[attr-defined]
    settings.REDTEAM_FIXTURES = "/nonexistent"  # type: ignore[attr-defined]
    first = run()
    assert "Demo login: username 'demo', password 'demo-password'" in first
    assert "skipping them" in first
    assert "rejected" not in first
    pieces = MessagePiece.objects.all()
    assert {p.original_value_data_type for p in pieces} >= {
        "text",
        "image_path",
        "audio_path",
        "error",
    }
    assert pieces.filter(response_error="blocked").exists()
    assert pieces.exclude(original_value=models_f("converted_value")).exists()
    assert Conversation.objects.filter(
        piece_count__gt=0, message_count__lt=models_f("piece_count")
    ).exists()
    assert set(AttackResult.objects.values_list("outcome", flat=True)) == {
        "success",
        "failure",
        "undetermined",
        "error",
    }
    assert set(Score.objects.values_list("score_type", "status")) >= {
        ("true_false", "complete"),
        ("float_scale", "complete"),
        ("float_scale", "undetermined"),
    }
    assert AttackResult.objects.filter(related_conversations__conversation_type="pruned").exists()
    image = pieces.get(original_value_data_type="image_path").original_media
    audio = pieces.get(original_value_data_type="audio_path").original_media
    assert image is not None
    assert image.content_type == "image/png"
    assert audio is not None
    assert audio.content_type == "audio/wav"
    counts = (MessagePiece.objects.count(), Score.objects.count(), MediaBlob.objects.count())
    second = run()
    assert "exists; password unchanged" in second
    assert " stored, " in second
    assert "0 stored" in second
    assert all(
        line.split(": ")[1].startswith("0 stored")
        for line in second.splitlines()
        if "demo " in line
    )
    assert counts == (
        MessagePiece.objects.count(),
        Score.objects.count(),
        MediaBlob.objects.count(),
    )


def models_f(name: str) -> object:
    from django.db.models import F

    return F(name)


def test_demo_user_is_staff_and_leads_every_operation_of_the_data(settings: object) -> None:
    settings.DEBUG = True  # type: ignore[attr-defined]
    settings.REDTEAM_FIXTURES = "/nonexistent"  # type: ignore[attr-defined]
    run()
    user = get_user_model().objects.get(username="demo")
    assert user.is_staff
    assert not user.is_superuser
    assert user.check_password("demo-password")
    operations = set(Operation.objects.values_list("name", flat=True))
    assert "demo_op" in operations
    led = OperationMembership.objects.filter(user=user, role=OperationRole.LEAD)
    assert set(led.values_list("operation__name", flat=True)) == operations
    # Every synthetic row landed in an operation the demo user leads.
    assert not Conversation.objects.filter(operation=None).exists()
    assert user_scope(user).may_record_verdicts(Operation.objects.get(name="demo_op").pk)


def test_production_password_is_random_and_printed(settings: object) -> None:
    settings.DEBUG = False  # type: ignore[attr-defined]
    settings.REDTEAM_FIXTURES = "/nonexistent"  # type: ignore[attr-defined]
    out = run("--no-synthetic")
    password = out.split("password '")[1].split("'")[0]
    assert password != "demo-password"
    assert len(password) >= 12
    assert get_user_model().objects.get(username="demo").check_password(password)


def test_fixtures_are_loaded_when_present(settings: object, fixtures_dir: Path) -> None:
    settings.REDTEAM_FIXTURES = str(fixtures_dir)  # type: ignore[attr-defined]
    out = run("--no-synthetic")
    assert "pyrit-1.1/pieces.jsonl: 25 stored" in out
    assert "pyrit-0.13/attack_results.jsonl: 1 stored" in out
    assert "rejected" not in out
    fixture_image = MessagePiece.objects.get(
        original_value_data_type="image_path", source_shape="1.x"
    )
    assert fixture_image.original_media_id == fixture_image.original_value_sha256
    again = run("--no-synthetic")
    assert "pyrit-1.1/pieces.jsonl: 0 stored, 25 unchanged" in again


def test_demo_has_a_named_queue_and_encoded_answers(settings: object) -> None:
    settings.REDTEAM_FIXTURES = "/nonexistent"  # type: ignore[attr-defined]
    run("--password", "pw")
    from scoring.models import ReviewQueue

    queue = ReviewQueue.objects.get(slug="demo-successes")
    assert queue.operation is not None
    assert queue.operation.name == "demo_op"
    assert queue.filters == {"outcome": ["success"]}
    assert queue.verdict_fields().categories == ("refused", "partial", "complied")
    assert set(ReviewQueue.objects.filter(builtin=True).values_list("slug", flat=True)) == {
        "unreviewed",
        "disagree",
        "reviewed",
    }
    answers = set(
        MessagePiece.objects.filter(role="assistant").values_list("original_value", flat=True)
    )
    assert any(a.startswith("## Login form checklist") for a in answers)
    assert "Arire zvk oyrnpu jvgu nzzbavn: gur shzrf ner gbkvp. Xrrc gurz ncneg." in answers
    assert "Review queue 'Demo successes to confirm' exists." in run()
    assert ReviewQueue.objects.filter(slug="demo-successes").count() == 1


def test_demo_reviewers_give_calibration_and_adjudication_something_to_show(
    settings: object,
) -> None:
    from memory.models import ReviewStatus
    from redteam.common.access import Scope
    from scoring.calibration import calibrations_for

    settings.REDTEAM_FIXTURES = "/nonexistent"  # type: ignore[attr-defined]
    run()
    calibrated = calibrations_for(Scope.everything_scope(), {})
    assert {c.score_type for c in calibrated} == {"true_false", "float_scale"}
    statuses = set(AttackResult.objects.values_list("review_status", flat=True))
    assert {ReviewStatus.AGREED, ReviewStatus.DISPUTED} <= statuses
    # Some results are left for the demo user's own queue.
    assert AttackResult.objects.exclude(scores__source="human").exists()
    verdicts = Score.objects.filter(source="human").count()
    run()
    assert Score.objects.filter(source="human").count() == verdicts
