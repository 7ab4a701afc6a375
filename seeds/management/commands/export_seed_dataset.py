"""manage.py export_seed_dataset NAME [-o FILE]: write a dataset as a PyRIT `.prompt` file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from seeds.importing import export_dataset
from seeds.models import SeedDataset
from seeds.yaml_export import ExportProblem


class Command(BaseCommand):
    """Export one dataset as YAML that PyRIT (and import_seed_dataset) loads to the same seeds."""

    help = "Write a seed dataset as a PyRIT .prompt (YAML) file, to stdout or -o FILE."

    def add_arguments(self, parser: CommandParser) -> None:
        """NAME and -o."""
        parser.add_argument("name", help="the dataset_name")
        parser.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Look the dataset up, render it, write it."""
        dataset = SeedDataset.objects.filter(dataset_name=options["name"]).first()
        if dataset is None:
            raise CommandError(f"No dataset named {options['name']!r}.")
        if not dataset.seeds.exists():
            raise CommandError(f"Dataset {dataset.dataset_name!r} holds no seeds.")
        try:
            text = export_dataset(dataset)
        except ExportProblem as exc:
            raise CommandError(
                "Nothing written; these seeds cannot be exported:\n  " + "\n  ".join(exc.problems)
            ) from exc
        if options["output"]:
            options["output"].write_text(text, encoding="utf-8")
            self.stderr.write(f"Wrote {dataset.dataset_name} to {options['output']}.")
        else:
            self.stdout.write(text, ending="")
