"""Score and ScorableContent now belong to memory (see memory 0007): state only."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('scoring', '0005_nul_safe_text_fields'),
        ('memory', '0007_score_from_scoring'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='score',
                    name='loose_content',
                ),
                migrations.RemoveField(
                    model_name='score',
                    name='attack_result',
                ),
                migrations.RemoveField(
                    model_name='score',
                    name='reviewer',
                ),
                migrations.RemoveField(
                    model_name='score',
                    name='scorer_dump',
                ),
                migrations.RemoveField(
                    model_name='score',
                    name='scorer_identifier',
                ),
                migrations.DeleteModel(
                    name='ScorableContent',
                ),
                migrations.DeleteModel(
                    name='Score',
                ),
            ],
        ),
    ]
