"""Identifiers get the name people know them by and their kind (redteam.core.identity.display),
filled for the rows already stored."""

from typing import Any

from django.db import migrations

import redteam.common.fields
from redteam.core.identity.display import display_name, identifier_kind

BATCH = 2000


def fill(apps: Any, schema_editor: Any) -> None:
    identifier = apps.get_model("memory", "ComponentIdentifier")
    rows = identifier.objects.only("hash", "class_name", "class_module", "params").order_by("hash")
    batch = []
    for row in rows.iterator(chunk_size=BATCH):
        row.display_name = display_name(row.class_name, row.params)
        row.kind = identifier_kind(row.class_name, row.class_module)
        batch.append(row)
        if len(batch) >= BATCH:
            identifier.objects.bulk_update(batch, ["display_name", "kind"])
            batch = []
    if batch:
        identifier.objects.bulk_update(batch, ["display_name", "kind"])


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0011_media_link_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="componentidentifier",
            name="display_name",
            field=redteam.common.fields.ExactCharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="componentidentifier",
            name="kind",
            field=redteam.common.fields.ExactCharField(
                blank=True, db_index=True, default="", max_length=16
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
