"""Conversations lose the indexes no read uses, paid by every conversation a message creates
or updates (memory.indexplans lists the reads, bench/explain.py shows their plans on a loaded
database, docs/indexes.md keeps them):

- the LIKE (varchar_pattern_ops) copies Django adds to indexed text columns and to the text
  primary key: conversations are filtered by whole values, never by prefix;
- last_timestamp's and operation's own indexes: conv_recent_idx and conv_op_recent_idx lead
  with them and serve every read on them;
- target_dump's: the dump is only followed from the row;
- outcome's: four values, each common, so the list's filter walks its order instead;
- first_timestamp's: the run export sorts an operation's conversations in memory;
- conv_labels_gin: the label filters also match conversations through their attack results'
  labels (an OR no GIN index can serve), so their plans walk the list order.

attack_class and target_identifier keep their index, renamed (conv_attack_idx,
conv_target_idx) rather than rebuilt: a rename is a catalogue change, so the migration takes
moments on a table of millions. On SQLite (no LIKE copies, no GIN, no index rename) the two
are recreated under the new names.
"""

import django.db.models.deletion
from django.db import migrations, models

import redteam.common.fields

TABLE = "memory_conversation"
# Kept, under a name of the model's Meta: (Django's name, new name, column).
RENAMED = [
    ("memory_conversation_attack_class_948582b5", "conv_attack_idx", "attack_class"),
    (
        "memory_conversation_target_identifier_id_59f821ff",
        "conv_target_idx",
        "target_identifier_id",
    ),
]
# Dropped: (name, its definition for the reverse, PostgreSQL only).
DROPPED = [
    (
        "memory_conversation_conversation_id_f8339b3e_like",
        '("conversation_id" varchar_pattern_ops)',
        True,
    ),
    (
        "memory_conversation_attack_class_948582b5_like",
        '("attack_class" varchar_pattern_ops)',
        True,
    ),
    ("memory_conversation_outcome_22e016ec_like", '("outcome" varchar_pattern_ops)', True),
    (
        "memory_conversation_target_dump_id_7a024251_like",
        '("target_dump_id" varchar_pattern_ops)',
        True,
    ),
    (
        "memory_conversation_target_identifier_id_59f821ff_like",
        '("target_identifier_id" varchar_pattern_ops)',
        True,
    ),
    ("conv_labels_gin", "USING gin (labels jsonb_path_ops)", True),
    ("memory_conversation_last_timestamp_ba73843d", '("last_timestamp")', False),
    ("memory_conversation_operation_id_ef0c8713", '("operation_id")', False),
    ("memory_conversation_target_dump_id_7a024251", '("target_dump_id")', False),
    ("memory_conversation_outcome_22e016ec", '("outcome")', False),
    ("memory_conversation_first_timestamp_80501581", '("first_timestamp")', False),
]


def _indexes(schema_editor):
    with schema_editor.connection.cursor() as cursor:
        return set(schema_editor.connection.introspection.get_constraints(cursor, TABLE))


def _rename(schema_editor, present, old, new, column):
    if old in present:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f'ALTER INDEX "{old}" RENAME TO "{new}"')
            return
        schema_editor.execute(f'DROP INDEX "{old}"')
    if new not in present:
        schema_editor.execute(f'CREATE INDEX "{new}" ON "{TABLE}" ("{column}")')


def forwards(apps, schema_editor):
    present = _indexes(schema_editor)
    for name, _definition, _postgresql_only in DROPPED:
        if name in present:
            schema_editor.execute(f'DROP INDEX "{name}"')
    for old, new, column in RENAMED:
        _rename(schema_editor, present, old, new, column)


def backwards(apps, schema_editor):
    present = _indexes(schema_editor)
    postgresql = schema_editor.connection.vendor == "postgresql"
    for old, new, column in RENAMED:
        _rename(schema_editor, present, new, old, column)
    for name, definition, postgresql_only in DROPPED:
        if name not in present and (postgresql or not postgresql_only):
            schema_editor.execute(f'CREATE INDEX "{name}" ON "{TABLE}" {definition}')


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0019_search_document_once"),
        ("redteam", "0005_audit_exact_values"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="conversation",
                    name="attack_class",
                    field=redteam.common.fields.ExactCharField(
                        blank=True, default="", max_length=255
                    ),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="first_timestamp",
                    field=models.DateTimeField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="last_timestamp",
                    field=models.DateTimeField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="operation",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="redteam.operation",
                    ),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="outcome",
                    field=redteam.common.fields.ExactCharField(
                        blank=True, default="", max_length=16
                    ),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="target_dump",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="memory.identifierdump",
                    ),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="target_identifier",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="memory.componentidentifier",
                    ),
                ),
                migrations.AddIndex(
                    model_name="conversation",
                    index=models.Index(fields=["attack_class"], name="conv_attack_idx"),
                ),
                migrations.AddIndex(
                    model_name="conversation",
                    index=models.Index(fields=["target_identifier"], name="conv_target_idx"),
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
        ),
    ]
