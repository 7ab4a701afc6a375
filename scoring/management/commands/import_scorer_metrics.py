"""manage.py import_scorer_metrics FILE...: PyRIT's published scorer metrics (*_metrics.jsonl)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from redteam.common.audit import acting_as
from scoring.published import MAX_FILE_BYTES, RegistryError, import_registry


class Command(BaseCommand):
    """Import PyRIT metrics registry files, each all or nothing; importing twice changes
    nothing."""

    help = (
        "Import PyRIT *_metrics.jsonl scorer-metrics registries (e.g. the ones PyRIT 1.1 bundles "
        "under pyrit/datasets/scorer_evals/). Each file is imported whole or not at all; rows "
        "are keyed by file name and eval hash, so re-importing a file only applies its changes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """FILE... plus options."""
        parser.add_argument("files", nargs="+", type=Path, help="*_metrics.jsonl files")
        parser.add_argument("--user", help="username recorded as the importer (default: none)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Import each file; report per file; fail when any file was rejected."""
        user = None
        if options["user"]:
            try:
                user = get_user_model().objects.get(username=options["user"])
            except get_user_model().DoesNotExist as exc:
                raise CommandError(f"No user named {options['user']!r}.") from exc
        rejected = 0
        for path in options["files"]:
            try:
                data = _read(path)
                with acting_as(user, "" if user is not None else "manage.py"):
                    report = import_registry(data=data, file_name=path.name, imported_by=user)
            except RegistryError as exc:
                rejected += 1
                self.stderr.write(f"{path}: rejected, nothing written:")
                for problem in exc.problems[:20]:
                    self.stderr.write(f"  - {problem}")
                continue
            self.stdout.write(report.summary())
        if rejected:
            raise CommandError(f"{rejected} file(s) were rejected; nothing was written for them.")


def _read(path: Path) -> bytes:
    """The file's bytes, refusing one over the size limit without reading it all."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise RegistryError([f"cannot read the file: {exc.strerror or exc}"]) from None
    return data
