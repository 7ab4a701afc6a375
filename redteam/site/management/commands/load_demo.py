"""`manage.py load_demo`: demo login, PyRIT fixture rows, synthetic demo memory, and the demo
user as lead of every operation the data names.

Idempotent: every batch goes through redteam.site.ingest.ingest_batch, the entry point of the
API and of `import_pyrit_memory`, so a second run reports everything as unchanged. The PyRIT
fixtures are loaded when settings.REDTEAM_FIXTURES exists; the synthetic data needs nothing
but the standard library.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from memory import services
from memory.models import AttackResult
from redteam.common.access import user_scope
from redteam.common.media import store_media_bytes
from redteam.common.models import Operation, OperationMembership, OperationRole
from redteam.core.outcomes import ItemOutcome
from redteam.site.demo import build_demo_data, demo_payload
from redteam.site.ingest import ingest_batch
from scoring.models import ReviewQueue, ReviewRequirement
from scoring.services import record_review
from scoring.verdict_fields import VerdictAnswers, VerdictFields

DEMO_USERNAME = "demo"
DEMO_QUEUE_INSTRUCTIONS = """Confirm each **automated success**.

1. Read the last answer; open the *decoded view* when it is encoded.
2. `t` if the objective was really achieved, `f` if not.
3. Pick how far the model went: refused, partial or complied.
"""
DEV_PASSWORD = "demo-password"
# Two demo reviewers judge two results in three (true/false and a 0..1 scale), each
# disagreeing with the automated outcome now and then: the scorer calibration pages have
# something to compare, and in the demo operation, which asks for two independent verdicts,
# their disagreements wait in the adjudication queue. The rest stays for the demo user.
DEMO_REVIEWERS = {"rita": 4, "sam": 5}  # name -> disagrees with every n-th result
DEMO_REVIEW_FIELDS = VerdictFields(true_false=True, scale=True)

# folder -> file -> kind; .json files hold a list, .jsonl one item a line. Each folder is one
# ingest batch, which stores its kinds in dependency order.
FIXTURE_FILES: dict[str, dict[str, str]] = {
    "pyrit-1.1": {
        "conversations.jsonl": "conversations",
        "pieces.jsonl": "message_pieces",
        "scores.jsonl": "scores",
        "attack_results.jsonl": "attack_results",
        "seeds.jsonl": "seeds",
    },
    "pyrit-0.13": {
        "pieces.jsonl": "message_pieces",
        "scores.jsonl": "scores",
        "attack_results.jsonl": "attack_results",
        "seeds.jsonl": "seeds",
    },
}


def _read(path: Path) -> list[Any]:
    if path.suffix == ".json":
        value = json.loads(path.read_text(encoding="utf-8"))
        return value if isinstance(value, list) else [value]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


class Command(BaseCommand):
    """Load the demo data and create the demo login."""

    help = "Create the demo login and load PyRIT fixture rows plus synthetic demo memory."

    def add_arguments(self, parser: CommandParser) -> None:
        """--password, --no-fixtures, --no-synthetic, --no-reviews."""
        parser.add_argument("--password", help="Password for a newly created demo user.")
        parser.add_argument(
            "--reset-password", action="store_true", help="Set the password of an existing user."
        )
        parser.add_argument("--no-fixtures", action="store_true", help="Skip the PyRIT fixtures.")
        parser.add_argument(
            "--no-synthetic", action="store_true", help="Skip the synthetic demo data."
        )
        parser.add_argument(
            "--no-reviews", action="store_true", help="Skip the demo reviewers' verdicts."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """User, then fixtures, then synthetic data (a summary per file), then memberships."""
        user = self._user(options.get("password"), bool(options.get("reset_password")))
        if not options.get("no_fixtures"):
            self._fixtures()
        if not options.get("no_synthetic"):
            self._synthetic()
        self._memberships(user)
        self._queues(user)
        if not options.get("no_reviews"):
            self._reviews()

    def _queues(self, user: Any) -> None:
        """A named queue beside the built-in ones: the demo operation's successes, judged by
        category as well as true/false, with notes."""
        operation = Operation.objects.filter(name="demo_op").first()
        if operation is None:
            return
        queue, created = ReviewQueue.objects.get_or_create(
            slug="demo-successes",
            defaults={
                "name": "Demo successes to confirm",
                "operation": operation,
                "instructions": DEMO_QUEUE_INSTRUCTIONS,
                "filters": {"outcome": ["success"]},
                "review": "unreviewed",
                "ask_true_false": True,
                "categories": ["refused", "partial", "complied"],
                "ask_notes": True,
                "created_by": user,
            },
        )
        self.stdout.write(f"Review queue {queue.name!r} {'created' if created else 'exists'}.")

    def _reviews(self) -> None:
        """Demo reviewers' verdicts (see DEMO_REVIEWERS). Each review's form token is derived
        from the result and the reviewer, so a second run stores nothing new."""
        operation = Operation.objects.filter(name="demo_op").first()
        if operation is not None:
            ReviewRequirement.objects.get_or_create(
                operation=operation,
                label_key="operation",
                label_value="demo_op",
                defaults={"required_verdicts": 2},
            )
        results = list(
            AttackResult.objects.filter(last_response__isnull=False).order_by("attack_result_id")
        )
        users = get_user_model()
        for name, every in DEMO_REVIEWERS.items():
            reviewer, created = users.objects.get_or_create(username=name)
            if created:
                reviewer.set_unusable_password()
                reviewer.save()
            OperationMembership.objects.bulk_create(
                [
                    OperationMembership(user=reviewer, operation=op, role=OperationRole.REVIEWER)
                    for op in Operation.objects.all()
                ],
                ignore_conflicts=True,
            )
            scope = user_scope(reviewer)
            for index, result in enumerate(results):
                if index % 3 == 2:
                    continue
                achieved = (result.outcome == "success") != (index % every == 1)
                record_review(
                    attack_result=result,
                    reviewer=reviewer,
                    scope=scope,
                    answers=VerdictAnswers(
                        rationale=f"Demo review by {name}.",
                        objective=achieved,
                        scale=0.9 if achieved else 0.1,
                        fields=DEMO_REVIEW_FIELDS,
                    ),
                    submission=uuid.uuid5(uuid.NAMESPACE_URL, f"demo-review/{name}/{result.pk}"),
                )
        self.stdout.write(
            f"Demo reviewers {', '.join(DEMO_REVIEWERS)} judged two results in three."
        )

    def _memberships(self, user: Any) -> None:
        """The demo user leads every operation (the data's labels created them)."""
        operations = list(Operation.objects.order_by("name"))
        OperationMembership.objects.bulk_create(
            [
                OperationMembership(user=user, operation=op, role=OperationRole.LEAD)
                for op in operations
            ],
            ignore_conflicts=True,
        )
        names = ", ".join(str(op.name) for op in operations) or "none"
        self.stdout.write(f"Demo user {DEMO_USERNAME!r} leads operations: {names}")

    def _user(self, password: str | None, reset: bool) -> Any:
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(
            username=DEMO_USERNAME, defaults={"is_staff": True, "email": "demo@example.invalid"}
        )
        if created or reset:
            # A known password only for development; otherwise a fresh random one.
            chosen = password or (DEV_PASSWORD if settings.DEBUG else secrets.token_urlsafe(12))
            user.set_password(chosen)
            user.is_staff = True
            user.save()
            self.stdout.write(
                self.style.SUCCESS(f"Demo login: username {DEMO_USERNAME!r}, password {chosen!r}")
            )
        else:
            self.stdout.write(f"Demo user {DEMO_USERNAME!r} exists; password unchanged.")
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        return user

    def _report(self, label: str, outcomes: Sequence[ItemOutcome]) -> None:
        counts = {s: sum(1 for o in outcomes if o.status == s) for s in ("stored", "unchanged")}
        rejected = [o for o in outcomes if o.status == "rejected"]
        line = f"{label}: {counts['stored']} stored, {counts['unchanged']} unchanged"
        if rejected:
            first = "; ".join(f"{e.field}: {e.message}" for e in rejected[0].errors)
            self.stdout.write(self.style.WARNING(f"{line}, {len(rejected)} rejected ({first})"))
        else:
            self.stdout.write(line)

    def _fixtures(self) -> None:
        root = Path(getattr(settings, "REDTEAM_FIXTURES", "") or "")
        if not root.is_dir():
            self.stdout.write(f"No PyRIT fixtures at {root}; skipping them.")
            return
        for folder, files in FIXTURE_FILES.items():
            found = {name: kind for name, kind in files.items() if (root / folder / name).is_file()}
            payload = {kind: _read(root / folder / name) for name, kind in found.items()}
            if not payload:
                continue
            outcomes = _by_kind(ingest_batch(payload).outcomes)
            for name, kind in found.items():
                self._report(f"{folder}/{name}", outcomes.get(kind, []))
        media = root / "pyrit-1.1" / "media"
        if media.is_dir():
            for file in sorted(media.iterdir()):
                if file.is_file():
                    self._media(file.name, file.read_bytes())

    def _media(self, name: str, data: bytes) -> None:
        from seeds.services import link_media as link_seed_media

        with transaction.atomic():
            blob = store_media_bytes(data, filename=name)
            linked = services.link_media(blob) + link_seed_media(blob)
        self.stdout.write(f"media {name}: {blob.content_type}, linked to {linked} rows")

    def _synthetic(self) -> None:
        data = build_demo_data()
        for name, media in data.media.items():
            self._media(name, media)
        payload = demo_payload(data)
        outcomes = _by_kind(ingest_batch(payload).outcomes)
        for kind in payload:
            self._report(f"demo {kind}", outcomes.get(kind, []))


def _by_kind(outcomes: Sequence[ItemOutcome]) -> dict[str, list[ItemOutcome]]:
    """A batch's outcomes, list by list."""
    lists: dict[str, list[ItemOutcome]] = {}
    for outcome in outcomes:
        lists.setdefault(outcome.kind, []).append(outcome)
    return lists
