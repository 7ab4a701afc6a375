"""Score and ScorableContent move from the scoring app to memory (PyRIT keeps scores in its
memory, and pieces, attack results and scenario results embed them).

State only: the tables keep their names here and are renamed by the next migration. The
content types follow the models, so permissions (record_verdict) and admin history stay
attached to the same rows.
"""

import django.db.models.deletion
import redteam.common.fields
from django.conf import settings
from django.db import migrations, models


MOVED = ("score", "scorablecontent")


def move_content_types(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    existing = set(
        content_type.objects.using(db)
        .filter(app_label="memory", model__in=MOVED)
        .values_list("model", flat=True)
    )
    content_type.objects.using(db).filter(app_label="scoring", model__in=MOVED).exclude(
        model__in=existing
    ).update(app_label="memory")


def restore_content_types(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    content_type.objects.using(db).filter(app_label="memory", model__in=MOVED).update(
        app_label="scoring"
    )


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0006_nul_safe_text_fields'),
        ('scoring', '0005_nul_safe_text_fields'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ScorableContent',
                    fields=[
                        ('id', models.UUIDField(primary_key=True, serialize=False)),
                        ('value', redteam.common.fields.ExactTextField()),
                        ('value_sha256', redteam.common.fields.ExactCharField(blank=True, db_index=True, max_length=64, null=True)),
                        ('data_type', redteam.common.fields.ExactCharField(choices=[('text', 'text'), ('image_path', 'image_path'), ('audio_path', 'audio_path'), ('video_path', 'video_path'), ('binary_path', 'binary_path'), ('url', 'url'), ('reasoning', 'reasoning'), ('error', 'error'), ('function_call', 'function_call'), ('tool_call', 'tool_call'), ('function_call_output', 'function_call_output')], max_length=32)),
                        ('first_seen_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'scoring_scorablecontent',
                        'indexes': [models.Index(fields=['-first_seen_at', '-id'], name='scorable_recent_idx')],
                        'constraints': [models.CheckConstraint(condition=models.Q(('data_type__in', ['text', 'image_path', 'audio_path', 'video_path', 'binary_path', 'url', 'reasoning', 'error', 'function_call', 'tool_call', 'function_call_output'])), name='scorable_content_type_valid')],
                    },
                ),
                migrations.CreateModel(
                    name='Score',
                    fields=[
                        ('id', models.UUIDField(primary_key=True, serialize=False)),
                        ('score_value', redteam.common.fields.ExactTextField(blank=True, null=True)),
                        ('status', redteam.common.fields.ExactCharField(choices=[('complete', 'complete'), ('undetermined', 'undetermined')], default='complete', max_length=16)),
                        ('score_value_description', redteam.common.fields.ExactTextField(blank=True, null=True)),
                        ('score_type', redteam.common.fields.ExactCharField(choices=[('true_false', 'true_false'), ('float_scale', 'float_scale'), ('unknown', 'unknown')], max_length=16)),
                        ('score_category', redteam.common.fields.ExactJSONField(blank=True, null=True)),
                        ('score_rationale', redteam.common.fields.ExactTextField(blank=True, null=True)),
                        ('score_metadata', redteam.common.fields.ExactJSONField(blank=True, default=dict)),
                        ('scorer_class', redteam.common.fields.ExactCharField(blank=True, db_index=True, default='', max_length=255)),
                        ('message_piece_id', models.UUIDField(blank=True, db_index=True, null=True)),
                        ('scorable', redteam.common.fields.ExactJSONField(blank=True, null=True)),
                        ('scorable_content_id', models.UUIDField(blank=True, null=True)),
                        ('timestamp', models.DateTimeField()),
                        ('objective', redteam.common.fields.ExactTextField(blank=True, null=True)),
                        ('task', redteam.common.fields.ExactTextField(blank=True, null=True)),
                        ('pyrit_version', redteam.common.fields.ExactCharField(blank=True, max_length=32, null=True)),
                        ('source_shape', redteam.common.fields.ExactCharField(default='1.x', max_length=8)),
                        ('source', redteam.common.fields.ExactCharField(choices=[('automated', 'automated'), ('human', 'human')], db_index=True, default='automated', max_length=16)),
                        ('verdict_submission', models.UUIDField(blank=True, editable=False, null=True)),
                        ('ingested_at', models.DateTimeField(auto_now_add=True)),
                        ('attack_result', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='memory.attackresult')),
                        ('loose_content', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='scores', to='memory.scorablecontent')),
                        ('reviewer', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('scorer_dump', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='memory.identifierdump')),
                        ('scorer_identifier', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='memory.componentidentifier')),
                    ],
                    options={
                        'db_table': 'scoring_score',
                        'permissions': [('record_verdict', 'Can record human verdicts')],
                        'indexes': [models.Index(fields=['-timestamp', '-id'], name='score_recent_idx'), models.Index(fields=['source', 'attack_result'], name='score_source_result_idx')],
                        'constraints': [models.CheckConstraint(condition=models.Q(('score_type__in', ['true_false', 'float_scale', 'unknown'])), name='score_type_valid'), models.CheckConstraint(condition=models.Q(('status__in', ['complete', 'undetermined'])), name='score_status_valid'), models.CheckConstraint(condition=models.Q(models.Q(('score_value__isnull', True), ('status', 'undetermined')), models.Q(('score_value__isnull', False), ('status', 'complete')), _connector='OR'), name='score_value_null_iff_undetermined'), models.UniqueConstraint(fields=('reviewer', 'verdict_submission'), name='verdict_submitted_once')],
                    },
                ),
            ],
        ),
        migrations.RunPython(move_content_types, restore_content_types),
    ]
