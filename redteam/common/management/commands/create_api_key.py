"""`manage.py create_api_key --user NAME --scopes ingest,read --operations OP1,OP2`: print a
new key once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from redteam.common.audit import acting_as
from redteam.common.models import (
    ApiKey,
    ApiKeyScope,
    Operation,
    operations_outside_memberships,
    validate_scopes,
)


class Command(BaseCommand):
    help = (
        "Create an API key for a user and print it. Only its hash is stored, so the key "
        "cannot be shown again; revoke it in the admin. The key reads and writes only its "
        "operations, and only while its user is a member of them (see `manage.py grant`)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="Username the key acts as.")
        parser.add_argument(
            "--scopes",
            default="ingest,read",
            help="Comma-separated scopes: ingest, read (default: both).",
        )
        parser.add_argument("--name", default="", help="A label for the key (default: scopes).")
        parser.add_argument(
            "--operations",
            default="",
            help="Comma-separated operations the key reads and writes (required); the user "
            "must be a member of each (a superuser's key may name any).",
        )
        parser.add_argument(
            "--default-operation",
            default=None,
            help="Where items that name no operation go (default: the first of --operations).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Validate the user and scopes, create the key, print it on stdout."""
        username: str = options["user"]
        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(username)
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive.")

        raw_scopes = str(options["scopes"])
        scopes = sorted({s.strip() for s in raw_scopes.split(",") if s.strip()})
        try:
            validate_scopes(scopes)
        except ValidationError:
            scopes = []
        if not scopes:
            raise CommandError(
                f"Unknown or missing scopes in {raw_scopes!r}; choose from "
                f"{', '.join(ApiKeyScope.values)}."
            )
        operations, default = self._operations(user, options)
        name = (options["name"] or f"{username} {'+'.join(scopes)}")[:50]

        # redteam/common/signals.py records the creation and the key's operations in the audit
        # trail, attributed to the command.
        with acting_as(name="manage.py create_api_key"):
            api_key, key = ApiKey.objects.create_key(
                name=name,
                user=user,
                scopes=scopes,
                operations=operations,
                default_operation=default,
            )
        self.stderr.write(
            f"Created API key {api_key.prefix!r} for {username} with scopes {scopes} in "
            f"operations {[op.name for op in operations]} (default {default.name!r}). "
            "It is shown once; store it now."
        )
        # The key alone on stdout, so `KEY=$(manage.py create_api_key ...)` works.
        self.stdout.write(key)

    def _operations(self, user: Any, options: dict[str, Any]) -> tuple[list[Operation], Operation]:
        """The key's operations (in the order given) and its default; CommandError when one is
        missing, unknown, or not the user's (pointing at `manage.py grant`)."""
        raw = str(options["operations"])
        names = list(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
        if not names:
            raise CommandError(
                "Name the key's operations with --operations OP1,OP2: a key with no operation "
                "reads and writes nothing."
            )
        default_name: str = options["default_operation"] or names[0]
        if default_name not in names:
            raise CommandError(
                f"--default-operation {default_name!r} is not one of --operations ({raw})."
            )
        found = {op.name: op for op in Operation.objects.filter(name__in=names)}
        unknown = [n for n in names if n not in found]
        if unknown:
            raise CommandError(
                f"No operation named {', '.join(map(repr, unknown))}; create it with "
                "`manage.py create_operation`."
            )
        operations = [found[n] for n in names]
        outside = operations_outside_memberships(user, operations)
        if outside:
            username = user.get_username()
            raise CommandError(
                f"{username} is not a member of {', '.join(map(repr, outside))}; run "
                f"`manage.py grant --user {username} --operation {outside[0]} --role ROLE` "
                "first (for each), or name only operations they belong to."
            )
        return operations, found[default_name]
