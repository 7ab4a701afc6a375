"""manage.py import_seed_dataset PATH...: import PyRIT `.prompt` files (files or folders)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from tqdm import tqdm

from seeds.importing import ImportSource, import_dataset


class _Plain:
    """A stream for tqdm.write over Django's OutputWrapper (which would add its own newline)."""

    def __init__(self, wrapper: OutputWrapper) -> None:
        self.wrapper = wrapper

    def write(self, text: str) -> None:
        self.wrapper.write(text, ending="")

    def flush(self) -> None:
        self.wrapper.flush()


class Command(BaseCommand):
    """Import seed datasets the way PyRIT loads them; identical groups already held are skipped."""

    help = (
        "Import PyRIT .prompt files (YAML). Folders are searched recursively. Groups a dataset "
        "already holds are skipped and reported, so importing twice adds nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """PATH... plus options."""
        parser.add_argument("paths", nargs="+", type=Path, help=".prompt files or folders")
        parser.add_argument(
            "--user", help="username recorded in the history and as added_by (default: none)"
        )
        parser.add_argument(
            "--root",
            type=Path,
            help="folder holding the dataset tree: media are read only from inside it "
            "(default: the folder given, or the file's own folder)",
        )
        parser.add_argument("--dry-run", action="store_true", help="report, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        """Collect files, import each all-or-nothing, report created/skipped per file."""
        user = None
        if options["user"]:
            try:
                user = get_user_model().objects.get(username=options["user"])
            except get_user_model().DoesNotExist as exc:
                raise CommandError(f"No user named {options['user']!r}.") from exc
        sources = self._sources(options["paths"], options["root"])
        if not sources:
            raise CommandError("No .prompt files found.")
        failed = 0
        totals = [0, 0]
        out, err = _Plain(self.stdout), _Plain(self.stderr)
        for source in tqdm(sources, desc="import", unit="file", disable=options["verbosity"] < 1):
            [report] = import_dataset(sources=[source], user=user, dry_run=options["dry_run"])
            tqdm.write(report.summary(), file=out)
            for problem in report.errors:
                tqdm.write(f"  - {problem}", file=err)
            failed += not report.ok
            totals[0] += report.seeds_created
            totals[1] += report.seeds_skipped
        verb = "would create" if options["dry_run"] else "created"
        self.stdout.write(
            f"{len(sources)} file(s): {verb} {totals[0]} seeds, skipped {totals[1]} already "
            f"present, {failed} file(s) rejected."
        )
        if failed:
            raise CommandError(f"{failed} file(s) were rejected; nothing was written for them.")

    def _sources(self, paths: list[Path], root: Path | None) -> list[ImportSource]:
        sources: list[ImportSource] = []
        for path in paths:
            if path.is_dir():
                folder = (root or path).resolve()
                for file in sorted(path.rglob("*.prompt")):
                    if not file.resolve().is_relative_to(folder):
                        # A symlinked .prompt that leads out of the tree is not read.
                        raise CommandError(f"{file} leads outside {folder}; not imported.")
                    sources.append(
                        ImportSource(
                            name=str(file.relative_to(path)),
                            path=file,
                            search_root=(root or path).resolve(),
                        )
                    )
            elif path.is_file():
                sources.append(
                    ImportSource(
                        name=path.name, path=path, search_root=root.resolve() if root else None
                    )
                )
            else:
                raise CommandError(f"{path} is neither a file nor a folder.")
        return sources
