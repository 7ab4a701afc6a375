"""`manage.py create_operation NAME [--description TEXT]`: start an engagement."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from redteam.common.audit import acting_as
from redteam.common.memberships import create_operation
from redteam.common.models import Operation


class Command(BaseCommand):
    help = (
        "Create an operation (an engagement). NAME is the value of the `operation` memory "
        "label that places ingested rows in it. Grant roles in it with `manage.py grant`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The operation's name, as its `operation` label says.")
        parser.add_argument("--description", default="", help="What the engagement is about.")

    def handle(self, *args: Any, **options: Any) -> None:
        """Refuse a taken or invalid name; create the operation and say so."""
        name: str = options["name"]
        if Operation.objects.filter(name=name).exists():
            raise CommandError(f"An operation named {name!r} already exists.")
        try:
            # The creation is audited (redteam/common/signals.py), attributed to the command.
            with acting_as(name="manage.py create_operation"):
                operation = create_operation(name=name, description=options["description"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(
            f"Created operation {operation.name!r}. Grant roles in it with "
            f"`manage.py grant --user USER --operation {operation.name} --role ROLE`."
        )
