"""Hostile seed templates and YAML: time and peak memory of the bounded work vs ordinary work.

    .venv/bin/python bench/seeds_hostile.py

No database: templating, the YAML loader and the exporter are framework-free. Each class runs
in a fresh Python process (so peak memory is its own), a few times; the table shows the median
wall time, the peak resident memory of the process that asked (the server worker) above its
start, and the peak resident memory of the forked renderer child, each also as a ratio to the
ordinary template. Then a whole-dataset export and import of ordinary templates (hundreds of
seeds, one child each way). Budget: every class under 5 s and 256 MiB of child memory above
the worker's own; exit status 1 when missed.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from _common import ROOT

BUDGET_SECONDS = 5.0
BUDGET_CHILD_MIB = 256 + 64  # the address-space cap, plus what the worker itself holds

ORDINARY = "Tell {{ who }} how to {{ verb }} the {{ thing }}, step by step."
TEMPLATES = {
    "ordinary": ORDINARY,
    "wordwrap (quadratic)": '{{ ("a" * 499999)|wordwrap(1) }}',
    "list|join (1 GB)": '{{ ("a" * 10000)|list|join("b" * 100000) }}',
    "indent prefix": '{{ ("a\\n" * 200000)|indent("x" * 100000) }}',
    "replace growth": "{{ ('a' * 999999)|replace('a', 'bb') }}",
    "multiply": "{{ 'a' * 999999 ~ 'b' * 999999 }}",
    "range|join": "{{ range(10000)|list|join('y' * 1000) }}",
    "nesting 5000": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
    "blocks 3000": "{% if 1 %}" * 3000 + "x" + "{% endif %}" * 3000,
}


def _bomb(levels: int, fan_out: int) -> str:
    lines = ["a0: &a0 [lol]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan_out)}]")
    return (
        "\n".join(lines)
        + f"\ndataset_name: d\nseeds:\n  - {{value: x, metadata: {{b: *a{levels}}}}}\n"
    )


YAML = {
    "yaml ordinary (200 seeds)": "dataset_name: d\nseeds:\n"
    + "".join(f"  - value: seed {i} {{{{ who }}}}\n" for i in range(200)),
    "yaml alias bomb 10^9": _bomb(9, 10),
    "yaml alias bomb 2^30": _bomb(30, 2),
}


def _peak_kib() -> tuple[int, int]:
    return (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )


def _one(name: str) -> dict[str, float]:
    """Run one class a few times in this (fresh) process; report median time and peaks."""
    from seeds.templating import render_strict
    from seeds.yaml_loader import DatasetLoadError, load_dataset_text

    work: Callable[[], object]
    if name in TEMPLATES:
        template = TEMPLATES[name]

        def work() -> object:
            try:
                return render_strict(template, name, who="you", verb="open", thing="lock")
            except ValueError as exc:
                return exc

    else:
        text = YAML[name]

        def work() -> object:
            try:
                return load_dataset_text(text, source_name=name)
            except DatasetLoadError as exc:
                return exc

    start_self, _ = _peak_kib()
    times = []
    outcome: object = None
    for _ in range(3 if name in {"ordinary", "yaml ordinary (200 seeds)"} else 1):
        began = time.perf_counter()
        outcome = work()
        times.append(time.perf_counter() - began)
    peak_self, peak_child = _peak_kib()
    return {
        "seconds": statistics.median(times),
        "worker_growth_mib": (peak_self - start_self) / 1024,
        "child_peak_mib": peak_child / 1024,
        "refused": float(isinstance(outcome, Exception)),
    }


def _whole_dataset(seeds: int) -> tuple[float, float]:
    """Export then import `seeds` templated seeds: seconds each (one child per direction)."""
    from seeds.yaml_export import build_document, dump_document
    from seeds.yaml_loader import load_dataset_text

    rows = [
        SimpleNamespace(
            id=i,
            value=f"seed {i}: {{{{ 7 * {i} }}}} {{{{ who }}}}",
            seed_type="prompt",
            data_type="text",
            role="user",
            sequence=0,
            parameters=["who"],
            name=None,
            description=None,
            source=None,
            added_by=None,
            date_added=None,
            dataset_name="d",
            harm_categories=[],
            authors=[],
            groups=[],
            metadata={},
            response_json_schema=None,
            is_general_technique=False,
            value_sha256=None,
        )
        for i in range(seeds)
    ]
    began = time.perf_counter()
    text = dump_document(build_document({"dataset_name": "d"}, [(None, [r]) for r in rows]))
    exported = time.perf_counter() - began
    began = time.perf_counter()
    loaded = load_dataset_text(text, source_name="export.prompt")
    imported = time.perf_counter() - began
    assert [s.value for s in loaded.seeds] == [r.value for r in rows]
    return exported, imported


def main() -> int:
    """Run every class in its own process and print the table and the ratios."""
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(_one(sys.argv[2])))
        return 0
    script = str(Path(__file__).resolve())
    results: dict[str, dict[str, float]] = {}
    for name in [*TEMPLATES, *YAML]:
        done = subprocess.run(
            [sys.executable, script, "--one", name],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        results[name] = json.loads(done.stdout)
    base = results["ordinary"]
    missed = False
    print(
        f"{'class':28} {'time s':>8} {'x ordinary':>11} {'worker +MiB':>12} "
        f"{'child MiB':>10} {'x ordinary':>11}  refused"
    )
    for name, r in results.items():
        ref = results["yaml ordinary (200 seeds)"] if name.startswith("yaml") else base
        time_ratio = r["seconds"] / max(ref["seconds"], 1e-6)
        mem_ratio = r["child_peak_mib"] / max(ref["child_peak_mib"], 1e-6)
        print(
            f"{name:28} {r['seconds']:8.3f} {time_ratio:11.1f} {r['worker_growth_mib']:12.1f} "
            f"{r['child_peak_mib']:10.1f} {mem_ratio:11.2f}  {'yes' if r['refused'] else 'no'}"
        )
        over = r["seconds"] > BUDGET_SECONDS or r["child_peak_mib"] > BUDGET_CHILD_MIB
        missed = (
            missed
            or over
            or (name not in {"ordinary", "yaml ordinary (200 seeds)"} and not r["refused"])
        )
    for seeds in (100, 500):
        exported, imported = _whole_dataset(seeds)
        print(
            f"whole dataset of {seeds} templated seeds: export {exported:.2f} s, "
            f"import {imported:.2f} s"
        )
        missed = missed or exported > BUDGET_SECONDS or imported > BUDGET_SECONDS
    print("budget:", "missed" if missed else "met")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
