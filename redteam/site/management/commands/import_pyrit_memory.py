"""`manage.py import_pyrit_memory PATH`: import a PyRIT SQLite memory file (1.x or 0.13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from redteam.core.operations import OperationLabelError, labelled_operation
from redteam.site.pyrit_sqlite import (
    DEFAULT_CHUNK_SIZE,
    ImportProgress,
    ImportReport,
    PyritSqliteError,
    iter_import,
)


class Command(BaseCommand):
    help = (
        "Import a PyRIT SQLite memory file (PyRIT 1.x or 0.12-0.14 schema) through the "
        "ingestion services. Idempotent: re-running stores nothing new."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The PyRIT memory file (e.g. pyrit.db).")
        parser.add_argument(
            "--chunk-size",
            type=int,
            default=DEFAULT_CHUNK_SIZE,
            help=f"Rows per batch (default {DEFAULT_CHUNK_SIZE}).",
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="No progress bar (e.g. in CI logs)."
        )
        parser.add_argument(
            "--strict", action="store_true", help="Exit with an error if any row was rejected."
        )
        parser.add_argument(
            "--media-from",
            metavar="DIR",
            help="Folder holding the run's media files, found by the tail of each path "
            "(default: the paths in the file, where readable).",
        )
        parser.add_argument(
            "--no-media", action="store_true", help="Store no media bytes (paths only)."
        )
        parser.add_argument(
            "--operation",
            metavar="NAME",
            help="Operation for rows whose labels name none (default: unassigned); rows "
            "labelled with an operation go there, which is created if missing.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the import chunk by chunk with a progress bar per table, then print a summary."""
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        if options["chunk_size"] < 1:
            raise CommandError("--chunk-size must be at least 1.")
        if options["media_from"] and not Path(options["media_from"]).is_dir():
            raise CommandError(f"--media-from: no such folder: {options['media_from']}")
        if options["operation"] is not None:
            try:
                labelled_operation({"operation": options["operation"]})
            except OperationLabelError as exc:
                raise CommandError(f"--operation {exc}") from None
        show = not options["no_progress"]
        bar: tqdm[Any] | None = None
        current = ""
        report: ImportReport | None = None
        try:
            steps = iter_import(
                path,
                chunk_size=options["chunk_size"],
                media_from=options["media_from"],
                media=not options["no_media"],
                operation=options["operation"],
            )
            for step in steps:
                report = step.report
                if step.table != current:
                    if bar is not None:
                        bar.close()
                    current = step.table
                    bar = self._bar(step) if show and step.table != "done" else None
                if bar is not None:
                    bar.n = step.done
                    bar.refresh()
        except PyritSqliteError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            if bar is not None:
                bar.close()
        assert report is not None
        self._summary(report)
        if options["strict"] and report.rejected:
            raise CommandError(f"{report.rejected} row(s) rejected.")

    def _bar(self, step: ImportProgress) -> tqdm[Any]:
        # The raw stream: OutputWrapper.write would end every bar refresh with a newline.
        stream = cast(TextIO, self.stderr._out)
        return tqdm(total=step.total, desc=step.table, unit="row", file=stream, leave=True)

    def _summary(self, report: ImportReport) -> None:
        self.stdout.write(f"{report.path}: PyRIT {report.line} memory")
        w = max([len("table"), *(len(n) for n in report.tables)])
        self.stdout.write(
            f"{'table':<{w}} {'read':>8} {'stored':>8} {'unchanged':>9} {'rejected':>8} "
            f"{'skipped':>7}"
        )
        for name, t in report.tables.items():
            line = (
                f"{name:<{w}} {t.read:>8} {t.stored:>8} {t.unchanged:>9} {t.rejected:>8} "
                f"{t.skipped:>7}"
            )
            self.stdout.write(line + (f"  ({t.note})" if t.note else ""))
        for error in report.errors:
            self.stderr.write(f"rejected: {error}")
        for path in report.media_unreadable:
            self.stderr.write(f"media not readable: {path}")
        stored = sum(t.stored for t in report.tables.values())
        unchanged = sum(t.unchanged for t in report.tables.values())
        self.stdout.write(f"stored {stored}, unchanged {unchanged}, rejected {report.rejected}")
