"""Review answers on human verdicts: which field a Score answers, and withdrawal as history
(0014 labels the verdicts recorded before)."""

import django.db.models.deletion
import redteam.common.fields
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0012_identifier_display_name_and_kind'),
        ('redteam', '0005_audit_exact_values'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='score',
            name='verdict_submitted_once',
        ),
        migrations.AddField(
            model_name='score',
            name='superseded_by',
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='score',
            name='verdict_field',
            field=redteam.common.fields.ExactCharField(blank=True, choices=[('', 'not a review answer'), ('objective', 'objective true/false'), ('scale', '0..1 scale'), ('category', 'category')], default='', max_length=16),
        ),
        migrations.AddField(
            model_name='score',
            name='withdrawn_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='score',
            name='withdrawn_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddIndex(
            model_name='score',
            index=models.Index(condition=models.Q(('reviewer__isnull', False)), fields=['reviewer', '-timestamp', '-id'], name='score_reviewer_recent_idx'),
        ),
        migrations.AddConstraint(
            model_name='score',
            constraint=models.UniqueConstraint(fields=('reviewer', 'verdict_submission', 'verdict_field'), name='verdict_submitted_once'),
        ),
    ]
