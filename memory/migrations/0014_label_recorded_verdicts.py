"""Label the verdicts recorded before review answers existed.

They are objective (true_false) or scale (float_scale) answers; each one without a submission
token becomes its own review, keyed by its id. A migration of its own, so the updates do not
share a transaction with 0013's schema changes.
"""

from typing import Any

from django.db import migrations, models


def label_recorded_verdicts(apps: Any, schema_editor: Any) -> None:
    """Name the answer of every verdict recorded on this server (human, on a result)."""
    score = apps.get_model("memory", "Score")
    verdicts = score.objects.using(schema_editor.connection.alias).filter(
        source="human", attack_result__isnull=False
    )
    verdicts.filter(score_type="true_false").update(verdict_field="objective")
    verdicts.filter(score_type="float_scale").update(verdict_field="scale")
    verdicts.filter(verdict_submission__isnull=True).update(verdict_submission=models.F("id"))


class Migration(migrations.Migration):
    dependencies = [("memory", "0013_score_review_answers")]

    operations = [migrations.RunPython(label_recorded_verdicts, migrations.RunPython.noop)]
