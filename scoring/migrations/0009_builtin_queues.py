"""The built-in review queues: every result without a verdict, verdicts that disagree with the
automated outcome, and reviewed results (no filter: each viewer sees their own operations)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

BUILTIN = [
    ("unreviewed", "Unreviewed", "Results without a human verdict yet, newest first."),
    ("disagree", "Disagreements", "Results whose human verdict contradicts the automated outcome."),
    ("reviewed", "Reviewed", "Results with a human verdict, to re-check or correct."),
]


def create(apps: Any, schema_editor: Any) -> None:
    queue = apps.get_model("scoring", "ReviewQueue")
    for slug, name, instructions in BUILTIN:
        queue.objects.update_or_create(
            slug=slug,
            defaults={
                "name": name,
                "instructions": instructions,
                "review": slug,
                "filters": {},
                "builtin": True,
            },
        )


def remove(apps: Any, schema_editor: Any) -> None:
    apps.get_model("scoring", "ReviewQueue").objects.filter(builtin=True).delete()


class Migration(migrations.Migration):
    dependencies = [("scoring", "0008_review_queues")]

    operations = [migrations.RunPython(create, remove)]
