"""The full-text document takes a converted value equal to the original once.

Parsing text into a tsvector is most of what the search index costs each ingested piece, and
most pieces (responses, prompts sent without a converter) carry the same text twice. The index
is rebuilt under a new name without blocking writes (CREATE INDEX CONCURRENTLY, so this
migration is not atomic), then takes the old one's name. PostgreSQL only, as in 0002.
"""

from django.db import migrations

# Must equal memory.lookups.search_document_sql("original_value", "converted_value") so the
# planner matches the query expression to the index (tests/memory/test_pages.py checks it).
PIECE_SEARCH_DOCUMENT = (
    "to_tsvector('simple'::regconfig, left(coalesce(original_value, ''), 100000) || "
    "CASE WHEN converted_value IS DISTINCT FROM original_value "
    "THEN ' ' || left(coalesce(converted_value, ''), 100000) ELSE '' END)"
)
# The document of migration 0002, restored when this migration is reversed.
PREVIOUS_DOCUMENT = (
    "to_tsvector('simple'::regconfig, left(coalesce(original_value, ''), 100000) || ' ' || "
    "left(coalesce(converted_value, ''), 100000))"
)


def _swap(schema_editor, document):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in (
        "DROP INDEX CONCURRENTLY IF EXISTS piece_search_gin_new",
        "CREATE INDEX CONCURRENTLY piece_search_gin_new ON memory_messagepiece "
        f"USING gin (({document}))",
        "DROP INDEX CONCURRENTLY IF EXISTS piece_search_gin",
        "ALTER INDEX piece_search_gin_new RENAME TO piece_search_gin",
    ):
        schema_editor.execute(sql)


def forwards(apps, schema_editor):
    _swap(schema_editor, PIECE_SEARCH_DOCUMENT)


def backwards(apps, schema_editor):
    _swap(schema_editor, PREVIOUS_DOCUMENT)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0018_conversation_updated_idx"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
