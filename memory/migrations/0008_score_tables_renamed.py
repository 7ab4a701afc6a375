"""The moved score tables take memory's names (memory_score, memory_scorablecontent)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0007_score_from_scoring'),
    ]

    operations = [
        migrations.AlterModelTable(
            name='scorablecontent',
            table=None,
        ),
        migrations.AlterModelTable(
            name='score',
            table=None,
        ),
    ]
