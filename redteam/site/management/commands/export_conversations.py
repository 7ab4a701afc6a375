"""`manage.py export_conversations`: message pieces as PyRIT JSON, filtered like the API.

The default output is PyRIT 0.13's `export_conversations` file: an indented JSON array of
`MessagePiece.to_dict()` (scores included), in PyRIT's memory order. `--shape 1.x` writes
`model_dump(mode="json")` dicts instead. `--run` writes the whole run the filters select
(conversations, pieces, scores, attack results, scenario results, seeds) as one 1.x ingest payload
(redteam/site/run_export.py).

A command is trusted: it exports every operation unless `--operation NAME` (repeatable) names
the ones to export; every read goes through that scope (redteam.common.access.command_scope).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Min, QuerySet
from django.http import QueryDict

from memory.export import export_pieces_with_scores
from memory.filters import MessagePieceFilterSet
from memory.models import MessagePiece
from memory.querysets import pieces_for_export
from redteam.common.access import Scope, add_operation_option, command_scope
from redteam.site.run_export import select_run, write_run

# Conversations exported per round trip: bounds memory for very large exports.
CONVERSATIONS_PER_CHUNK = 200

# CLI option -> MessagePieceFilterSet parameter; repeatable options take several values.
FILTER_OPTIONS: dict[str, str] = {
    "conversation_id": "conversation_id",
    "label": "label",
    "role": "role",
    "data_type": "data_type",
    "harm_category": "harm_category",
    "target": "target",
    "attack": "attack",
    "converter": "converter",
    "outcome": "outcome",
    "score_type": "score_type",
    "score_value": "score_value",
    "after": "after",
    "before": "before",
}
REPEATABLE = {"conversation_id", "label", "role", "data_type", "harm_category", "converter"}
REPEATABLE |= {"outcome"}


class Command(BaseCommand):
    help = (
        "Export message pieces as PyRIT JSON (0.13 export_conversations format by default). "
        "Filters match the API's /api/v1/message-pieces/ parameters; --operation limits the "
        "export to the named operations (default: every operation)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", default="-", help="File to write (default stdout).")
        parser.add_argument(
            "--shape",
            choices=["0.13", "1.x"],
            default=None,
            help="0.13: to_dict() with scores (default); 1.x: model_dump(mode='json').",
        )
        add_operation_option(
            parser, "Export only this operation's rows (repeatable; default: every operation)."
        )
        parser.add_argument(
            "--run",
            action="store_true",
            help=(
                "Write the whole run as one 1.x ingest payload: conversations, pieces, scores "
                "(with their loose content), attack results, scenario results and seeds (the "
                "filters select conversations; their related conversations come along)."
            ),
        )
        for option in FILTER_OPTIONS:
            flag = "--" + option.replace("_", "-")
            if option in REPEATABLE:
                parser.add_argument(flag, action="append", default=[], help="Repeatable.")
            else:
                parser.add_argument(flag)

    def handle(self, *args: Any, **options: Any) -> None:
        """Filter, then stream pieces in PyRIT order, a chunk of conversations at a time."""
        if options["run"] and options["shape"] == "0.13":
            raise CommandError("--run writes PyRIT 1.x shapes only; drop --shape 0.13.")
        options["shape"] = options["shape"] or ("1.x" if options["run"] else "0.13")
        try:
            scope = command_scope(options["operations"])
        except LookupError as exc:
            raise CommandError(f"--operation: {exc}.") from None
        options["scope"] = scope
        pieces = self._filtered(options, scope)
        out_path: str = options["output"]
        if out_path == "-":
            count = self._export(lambda text: self.stdout.write(text, ending=""), pieces, options)
        else:
            with open(out_path, "w", encoding="utf-8") as handle:
                count = self._export(handle.write, pieces, options)
        self.stderr.write(count)

    def _export(
        self, write: Callable[[str], Any], pieces: QuerySet[MessagePiece], options: dict[str, Any]
    ) -> str:
        """Write the pieces or the run; returns the summary line."""
        if not options["run"]:
            return f"Exported {self._write(write, pieces, options)} message piece(s)."
        filtered = any(options.get(option) for option in FILTER_OPTIONS)
        selection = select_run(pieces if filtered else None, scope=options["scope"])
        counts = write_run(write, selection)
        return "Exported " + ", ".join(f"{n} {key}" for key, n in counts.items()) + "."

    def _filtered(self, options: dict[str, Any], scope: Scope) -> QuerySet[MessagePiece]:
        data = QueryDict(mutable=True)
        for option, parameter in FILTER_OPTIONS.items():
            value = options.get(option)
            if isinstance(value, list):
                for v in value:
                    data.appendlist(parameter, v)
            elif value not in (None, ""):
                data[parameter] = value
        filterset = MessagePieceFilterSet(data, queryset=MessagePiece.objects.all(), scope=scope)
        if not filterset.is_valid():
            problems = "; ".join(
                f"--{name.replace('_', '-')}: {' '.join(errors)}"
                for name, errors in filterset.errors.items()
            )
            raise CommandError(f"Invalid filter: {problems}")
        return filterset.qs

    def _conversation_chunks(self, pieces: QuerySet[MessagePiece]) -> Iterator[list[str]]:
        # PyRIT's order: conversations by their earliest (matching) piece, then by id.
        order = (
            pieces.order_by()
            .values("conversation_id")
            .annotate(first=Min("timestamp"))
            .order_by("first", "conversation_id")
            .values_list("conversation_id", flat=True)
        )
        chunk: list[str] = []
        for conversation_id in order.iterator(chunk_size=2000):
            chunk.append(conversation_id)
            if len(chunk) >= CONVERSATIONS_PER_CHUNK:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    def _write(
        self, write: Callable[[str], Any], pieces: QuerySet[MessagePiece], options: dict[str, Any]
    ) -> int:
        # Written element by element, but byte-identical to json.dump(rows, f, indent=4).
        shape = options["shape"]
        scope: Scope = options["scope"]
        count = 0
        write("[")
        ids = pieces.values("pk")
        for chunk in self._conversation_chunks(pieces):
            rows = (
                pieces_for_export(scope)
                .filter(pk__in=ids, conversation_id__in=chunk)
                .order_by("conversation_id", "sequence", "position")
            )
            for row in export_pieces_with_scores(rows, shape, scope=scope):
                text = json.dumps(row, indent=4)
                write(("," if count else "") + "\n    " + text.replace("\n", "\n    "))
                count += 1
        write("\n]" if count else "]")
        return count
