"""`manage.py export_human_labels`: human verdicts as PyRIT 1.1's human-labeled CSV.

The same file the attack-results list's "Download human labels" gives for the same filters
(scoring.human_labels): `--kind objective` (default) writes an objective dataset from the
true/false verdicts, `--kind harm --harm-category C` a harm dataset from the 0..1 verdicts.

A command is trusted: it reads every operation unless `--operation NAME` (repeatable) names the
ones to export, or `--user NAME` exports what that user may read; every read goes through that
scope (redteam.common.access). Results left out are listed on stderr (and in the file's
comment lines).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import QueryDict

from redteam.common.access import Scope, add_operation_option, command_scope, user_scope
from scoring.human_labels import (
    KINDS,
    MAX_RATERS,
    ExportRefused,
    export_human_labels,
    max_rows,
    parse_request,
)
from scoring.review import REVIEW_VIEWS

# CLI option -> query parameter of the attack-results FilterSet or of the export.
FILTER_OPTIONS: dict[str, str] = {
    "label": "label",
    "harm_category": "harm_category",
    "after": "after",
    "before": "before",
    "outcome": "outcome",
    "attack": "attack",
    "target": "target",
    "converter": "converter",
    "scorer": "scorer",
    "operator": "operator",
    "objective": "objective",
}
REPEATABLE = {"label", "harm_category", "outcome", "converter"}
EXPORT_OPTIONS = (
    "kind",
    "dataset_version",
    "harm_definition",
    "harm_definition_version",
    "raters",
    "review",
)


class Command(BaseCommand):
    help = (
        "Export the attack results that hold human verdicts as PyRIT 1.1's human-labeled CSV "
        "(HumanLabeledDataset.from_csv). Filters match the attack-results list's; --operation "
        "or --user limits what is read (default: every operation)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", default="-", help="File to write (default stdout).")
        add_operation_option(
            parser, "Export only this operation's results (repeatable; default: every operation)."
        )
        parser.add_argument(
            "--user", metavar="USERNAME", help="Export only what this user may read."
        )
        parser.add_argument(
            "--kind",
            choices=KINDS,
            default=None,
            help="objective: true/false verdicts (default); harm: 0..1 verdicts of one "
            "--harm-category.",
        )
        parser.add_argument("--dataset-version", help="The file's dataset_version (default 1.0).")
        parser.add_argument(
            "--harm-definition", help="harm: the harm definition file (default <category>.yaml)."
        )
        parser.add_argument(
            "--harm-definition-version", help="harm: the definition's version (default 1.0)."
        )
        parser.add_argument(
            "--raters",
            type=int,
            help=f"Human score columns per row, 1..{MAX_RATERS} (default 1: the latest "
            "verdict); results with fewer raters are left out.",
        )
        parser.add_argument("--review", choices=REVIEW_VIEWS, help="Only this review view.")
        parser.add_argument(
            "--max-rows",
            type=int,
            default=None,
            help=f"Refuse more results than this (default {max_rows()}, as the download).",
        )
        for option in FILTER_OPTIONS:
            flag = "--" + option.replace("_", "-")
            if option in REPEATABLE:
                parser.add_argument(flag, action="append", default=[], help="Repeatable.")
            else:
                parser.add_argument(flag)

    def handle(self, *args: Any, **options: Any) -> None:
        """Parse as the download does, write the file, report what was left out."""
        scope = self._scope(options)
        data = QueryDict(mutable=True)
        for option, parameter in FILTER_OPTIONS.items():
            _put(data, parameter, options.get(option))
        for option in EXPORT_OPTIONS:
            _put(data, option, options.get(option))
        try:
            labels = export_human_labels(
                parse_request(data, scope), scope, limit=options["max_rows"]
            )
        except ExportRefused as exc:
            raise CommandError(str(exc)) from None
        out_path: str = options["output"]
        if out_path == "-":
            self.stdout.write(labels.text, ending="")
        else:
            with open(out_path, "w", encoding="utf-8", newline="") as handle:
                handle.write(labels.text)
        for result_id, reason in labels.left_out:
            self.stderr.write(f"left out {result_id}: {reason}")
        self.stderr.write(
            f"Exported {labels.rows} row(s); left out {len(labels.left_out)} attack result(s)."
        )

    def _scope(self, options: dict[str, Any]) -> Scope:
        if options["user"] and options["operations"]:
            raise CommandError("Give --operation or --user, not both.")
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"--user: no such user {options['user']!r}.")
            return user_scope(user)
        try:
            return command_scope(options["operations"])
        except LookupError as exc:
            raise CommandError(f"--operation: {exc}.") from None


def _put(data: QueryDict, parameter: str, value: Any) -> None:
    if isinstance(value, list):
        for v in value:
            data.appendlist(parameter, v)
    elif value not in (None, ""):
        data[parameter] = str(value)
