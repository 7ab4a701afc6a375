"""`manage.py grant --user U --operation OP --role ROLE` (or `--revoke`): memberships."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from redteam.common.audit import acting_as
from redteam.common.memberships import grant_role, revoke_role
from redteam.common.models import Operation, OperationRole

ROLES = ", ".join(OperationRole.values)


class Command(BaseCommand):
    help = (
        "Give a user a role in an operation, change the role they hold, or (--revoke) end "
        f"their membership. Roles, each including the ones before it: {ROLES}."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="Username of the member.")
        parser.add_argument("--operation", required=True, help="Name of the operation.")
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--role", help=f"The role to hold: {ROLES}.")
        action.add_argument(
            "--revoke", action="store_true", help="End the user's membership of the operation."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Look up the user, operation and role (CommandError naming what is unknown), then
        grant or revoke and say what changed. Both are audited as `manage.py grant`."""
        username: str = options["user"]
        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(username)
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        name: str = options["operation"]
        operation = Operation.objects.filter(name=name).first()
        if operation is None:
            raise CommandError(
                f"No operation named {name!r}; create it with `manage.py create_operation`."
            )
        role: str | None = options["role"]
        if role is not None and role not in OperationRole.values:
            raise CommandError(f"Unknown role {role!r}; choose from {ROLES}.")

        with acting_as(name="manage.py grant"):
            if role is None:
                previous = revoke_role(user=user, operation=operation)
                if previous is None:
                    self.stdout.write(f"{username} is not a member of {name!r}; nothing to revoke.")
                else:
                    self.stdout.write(
                        f"Revoked {username}'s {previous} role in {name!r}; their API keys no "
                        "longer reach it."
                    )
                return
            outcome = grant_role(user=user, operation=operation, role=role)
        if outcome.previous_role is None:
            self.stdout.write(f"Granted {username} the {role} role in {name!r}.")
        elif outcome.changed:
            self.stdout.write(
                f"Changed {username}'s role in {name!r} from {outcome.previous_role} to {role}."
            )
        else:
            self.stdout.write(f"{username} already holds the {role} role in {name!r}.")
