"""manage.py export_scorer_metrics: the team's scorer calibration as PyRIT *_metrics.jsonl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from redteam.common.access import add_operation_option, command_scope
from scoring.calibration import (
    CalibrationFilterError,
    calibration_query,
    jsonl_lines,
    scorer_calibrations,
)


class Command(BaseCommand):
    """Write one PyRIT metrics registry line per scorer configuration (eval hash)."""

    help = (
        "Write the agreement of every scorer configuration with the human verdicts as lines of "
        "PyRIT's *_metrics.jsonl registry (the scorer identifier's dump, eval_hash, metrics). "
        "Filters match /api/v1/scorer-metrics/; --operation limits the operations read "
        "(default: every operation)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """Output, operations and the API's filters."""
        parser.add_argument("-o", "--output", default="-", help="File to write (default stdout).")
        add_operation_option(parser, "Read only this operation's verdicts and scores (repeatable).")
        parser.add_argument("--eval-hash", dest="eval_hash", default="")
        for name in ("scorer", "label", "harm-category"):
            parser.add_argument(f"--{name}", action="append", default=[])
        parser.add_argument("--after", default="")
        parser.add_argument("--before", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        """Compute and write the lines."""
        try:
            scope = command_scope(options["operations"])
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        params: dict[str, list[str]] = {
            "eval_hash": [options["eval_hash"]] if options["eval_hash"] else [],
            "scorer": options["scorer"],
            "label": options["label"],
            "harm_category": options["harm_category"],
            "after": [options["after"]] if options["after"] else [],
            "before": [options["before"]] if options["before"] else [],
        }
        try:
            query = calibration_query(scope, params)
        except CalibrationFilterError as exc:
            raise CommandError(f"Invalid filters: {exc}") from exc
        lines = jsonl_lines(scorer_calibrations(query), query)
        body = "".join(line + "\n" for line in lines)
        if options["output"] == "-":
            self.stdout.write(body, ending="")
        else:
            Path(options["output"]).write_text(body, encoding="utf-8")
        self.stderr.write(f"{len(lines)} scorer configuration(s) written.")
