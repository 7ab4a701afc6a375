"""`manage.py export_pyrit_memory -o slice.db`: a filtered slice as a PyRIT SQLite memory file.

The filters are the conversation list's (or, with ``--from attack-results``, the attack-results
list's), as options or as the page's query string (``--query``), so the file holds what the
page's "Export as PyRIT memory" button downloads. PyRIT of the chosen line (``--shape 1.x``,
the default, or ``0.13``) opens it with ``SQLiteMemory(db_path=...)``. Media bytes are copied
into a folder beside the file and the pieces' paths rewritten to point at them
(redteam/site/memory_export.py).

A command is trusted: it exports every operation unless ``--operation NAME`` (repeatable)
names the ones to export; every read goes through that scope (redteam.common.access).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import QueryDict

from redteam.common.access import add_operation_option, command_scope
from redteam.site.memory_export import MediaFolder, write_memory_file
from redteam.site.memory_slice import LIST_PAGES, SliceError, select_slice

# Option -> filter parameter of the list pages; repeatable options take several values.
FILTER_OPTIONS: dict[str, str] = {
    "label": "label",
    "harm_category": "harm_category",
    "outcome": "outcome",
    "after": "after",
    "before": "before",
    "target": "target",
    "attack": "attack",
    "converter": "converter",
    "operator": "operator",
    "data_type": "data_type",
    "has_error": "has_error",
    "score_value": "score_value",
    "search": "q",
    "objective": "objective",
    "scorer": "scorer",
    "review": "review",
}
REPEATABLE = {"label", "harm_category", "outcome", "converter", "data_type"}


class Command(BaseCommand):
    help = (
        "Export a filtered slice (the conversation list's filters) as a PyRIT SQLite memory "
        "file that PyRIT opens with SQLiteMemory(db_path=...): pieces, scores (human verdicts "
        "included), attack results, scenario results, seeds, identifiers, and media files "
        "beside it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", required=True, help="The memory file to write.")
        parser.add_argument(
            "--shape",
            choices=["1.x", "0.13"],
            default="1.x",
            help="PyRIT schema line: 1.x (PyRIT 1.0/1.1, default) or 0.13 (PyRIT 0.12-0.14).",
        )
        add_operation_option(
            parser, "Export only this operation's rows (repeatable; default: every operation)."
        )
        parser.add_argument(
            "--from",
            dest="page",
            choices=LIST_PAGES,
            default="conversations",
            help="Whose filters apply: the conversation list's (default) or the attack-results "
            "list's.",
        )
        parser.add_argument(
            "--query",
            default="",
            metavar="QS",
            help="The list page's query string (e.g. 'label=operation:op1&outcome=success'), "
            "as the page's URL shows it; combined with the options.",
        )
        parser.add_argument(
            "--conversation-id",
            dest="conversation_ids",
            action="append",
            default=[],
            metavar="ID",
            help="Only these conversations (repeatable), with their related conversations.",
        )
        for option in FILTER_OPTIONS:
            flag = "--" + option.replace("_", "-")
            if option in REPEATABLE:
                parser.add_argument(flag, action="append", default=[], help="Repeatable.")
            else:
                parser.add_argument(flag)
        parser.add_argument(
            "--media-dir",
            metavar="DIR",
            help="Where media files go (default: OUTPUT's name + '_media', beside it).",
        )
        parser.add_argument(
            "--relative-media-paths",
            action="store_true",
            help="Write media paths relative to the file's folder (open the memory from "
            "there), instead of absolute paths.",
        )
        parser.add_argument(
            "--no-media", action="store_true", help="Copy no media; keep the original paths."
        )
        parser.add_argument("--force", action="store_true", help="Replace OUTPUT if it exists.")

    def handle(self, *args: Any, **options: Any) -> None:
        """Select the slice, write it, print what was written."""
        output = Path(options["output"])
        if options["output"] == "-":
            raise CommandError("-o: a SQLite memory file needs a path, not stdout.")
        if output.exists() and not options["force"]:
            raise CommandError(f"{output} exists; use --force to replace it.")
        if not output.parent.is_dir():
            raise CommandError(f"-o: no such folder: {output.parent}")
        try:
            scope = command_scope(options["operations"])
        except LookupError as exc:
            raise CommandError(f"--operation: {exc}.") from None
        data = QueryDict(options["query"], mutable=True)
        for option, parameter in FILTER_OPTIONS.items():
            value = options.get(option)
            for v in value if isinstance(value, list) else [value]:
                if v not in (None, ""):
                    data.appendlist(parameter, v)
        try:
            selection = select_slice(
                options["page"],
                data,
                scope=scope,
                conversation_ids=options["conversation_ids"],
                strict=True,
            )
        except SliceError as exc:
            raise CommandError(f"Invalid filter: {exc}") from None
        media = None
        if not options["no_media"]:
            folder = Path(options["media_dir"] or output.with_name(output.name + "_media"))
            if options["relative_media_paths"]:
                try:
                    prefix = folder.resolve().relative_to(output.parent.resolve()).as_posix()
                except ValueError:
                    raise CommandError(
                        "--relative-media-paths: the media folder must be inside the file's folder."
                    ) from None
            else:
                prefix = folder.resolve().as_posix()
            media = MediaFolder(directory=folder, prefix=prefix)
        report = write_memory_file(output, selection, shape=options["shape"], media=media)
        self.stdout.write(report.summary())
