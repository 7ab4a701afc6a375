"""Pieces keep an original_prompt_id entry only for copies.

A piece's original_prompt_id is its own id unless it is a copy of another piece (PyRIT's
duplicated conversations), so the full index on the column held a second entry, keyed at
random, for nearly every piece, paid by every insert. The originals are found by primary key
instead, the copies by the partial piece_copy_of_idx (memory.models.original_prompt_in;
memory.indexplans lists the reads, docs/indexes.md their plans).

Creating the partial index reads the whole table once: on a large table, run it at a quiet
time.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0020_conversation_indexes"),
        ("redteam", "0005_audit_exact_values"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="messagepiece",
            index=models.Index(
                condition=models.Q(("original_prompt_id", models.F("id")), _negated=True),
                fields=["original_prompt_id"],
                name="piece_copy_of_idx",
            ),
        ),
        migrations.AlterField(
            model_name="messagepiece",
            name="original_prompt_id",
            field=models.UUIDField(),
        ),
    ]
