"""`manage.py create_api_key --user NAME --scopes ingest,read`: print a new key once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from redteam.common.audit import acting_as
from redteam.common.models import ApiKey, ApiKeyScope, validate_scopes


class Command(BaseCommand):
    help = (
        "Create an API key for a user and print it. Only its hash is stored, so the key "
        "cannot be shown again; revoke it in the admin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="Username the key acts as.")
        parser.add_argument(
            "--scopes",
            default="ingest,read",
            help="Comma-separated scopes: ingest, read (default: both).",
        )
        parser.add_argument("--name", default="", help="A label for the key (default: scopes).")

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
        name = (options["name"] or f"{username} {'+'.join(scopes)}")[:50]

        # redteam/signals.py records the creation in the audit trail, attributed to the command.
        with acting_as(name="manage.py create_api_key"):
            api_key, key = ApiKey.objects.create_key(name=name, user=user, scopes=scopes)
        self.stderr.write(
            f"Created API key {api_key.prefix!r} for {username} with scopes {scopes}. "
            "It is shown once; store it now."
        )
        # The key alone on stdout, so `KEY=$(manage.py create_api_key ...)` works.
        self.stdout.write(key)
