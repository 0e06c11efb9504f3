"""`zmem.lab` returns `zmem lab --json`'s report, equal in every field not measured with a clock."""

from __future__ import annotations

import json
import re

import zmem
from conftest import run_cli

# Measured with a clock (or judged on such a measurement), or read from the machine as it is at
# the moment (its memory pressure, the free space a swap file would go in): these differ
# between any two runs.
TIMED = re.compile(
    r"(mbps$|seconds|_ns$|_ns_per_page$|_ns_|cpu_secs|latency|us_per_sec|^why$|^reason$"
    r"|^over_budget$|^pressure$|^free_bytes$)"
)
# Generous budgets: every verified candidate fits, so the choice rests on memory alone and
# does not depend on how busy the machine was.
BUDGETS = ("--cpu-budget", "1000", "--latency-budget", "1000000")


def compare(a, b, path="report"):
    """Every key both have, recursively, except the timed ones; returns how many were compared."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        n = 0
        for k in a:
            if TIMED.search(k):
                continue
            n += compare(a[k], b[k], f"{path}.{k}")
        return n
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        return sum(compare(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    assert a == b, f"{path}: {a!r} != {b!r}"
    return 1


def test_lab_equals_the_cli(zmem_bin, tmp_path):
    path = tmp_path / "host.zpages"
    zmem.PageSet.generate("mixed", pages=1024, seed=7).save(path)
    # A device profile, not a measurement: the measured one's latencies are a clock's.
    p = run_cli(
        zmem_bin, "lab", "--json", "--observe", "0", "--swap-device", "nvme", *BUDGETS, str(path)
    )
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    ours = zmem.lab(
        zmem.PageSet.open(path), observe=0, cpu_budget=1000, latency_budget=1e6, swap_device="nvme"
    )
    assert isinstance(ours, dict)
    # One answer: the decision, naming one of the candidates (or none), and nothing else.
    assert "recommendation" not in ours and "verdict" not in ours
    assert ours["decision"]["config"] in {c["name"] for c in ours["candidates"]} | {"none"}
    # Equal savings are broken by clearly less CPU, a clock's measure: where either run's
    # decision was, the decision (and the stack that follows it) may differ.
    by_cpu = lambda r: r["decision"]["reason"].get("by") == "less_cpu"  # noqa: E731
    if by_cpu(cli) or by_cpu(ours):
        for r in (cli, ours):
            r.pop("decision", None)
            r.get("zswap", {}).pop("stack", None)
    compared = compare(cli, ours)
    # Hundreds of sizes, counts, names and choices, not a handful.
    assert compared > 200, compared
    assert ours["source"]["kind"] == "file" and str(path) in ours["source"]["detail"]
    t = zmem.candidates_table(ours)
    assert t.num_rows == len(cli["candidates"]) and t.column_names[0] == "name"


def test_lab_on_other_pages_differs():
    a = zmem.lab(zmem.PageSet.generate("mixed", pages=512, seed=1), observe=0, min_time_ms=1)
    b = zmem.lab(zmem.PageSet.generate("perf", pages=512, seed=1), observe=0, min_time_ms=1)
    sizes = lambda r: [p["pool_bytes"] for p in r["policies"]]  # noqa: E731
    assert sizes(a) != sizes(b)


def test_cpu_is_priced_on_the_generated_trace_only_when_asked():
    """Pages from a file, nothing observed, no cold curve: CPU is not priced (rates 0, source
    `none`) unless the generated trace is asked for."""
    pages = zmem.PageSet.generate("mixed", pages=256, seed=3)
    plain = zmem.lab(pages, observe=0, min_time_ms=1)
    assert plain["rates"]["source"] == "none" and plain["rates"]["swap_ins_per_sec"] == 0
    assert "not priced" in plain["rates"]["note"]
    asked = zmem.lab(pages, observe=0, min_time_ms=1, generated_trace=True)
    assert asked["rates"]["source"] == "replay" and asked["rates"]["swap_ins_per_sec"] > 0


def test_lab_writes_its_files_as_the_cli_does(zmem_bin, tmp_path):
    """`output`, `apply_script` and `undo_script` write what `zmem lab -o DIR --apply-script F
    --undo-script G` writes (one function for both doors): report.json is the returned report."""
    pages = zmem.PageSet.generate("mixed", pages=256, seed=3)
    out, apply, undo = tmp_path / "out", tmp_path / "apply.sh", tmp_path / "undo.sh"
    r = zmem.lab(
        pages, observe=0, min_time_ms=1, swap_device="nvme", output=out, apply_script=apply,
        undo_script=undo,
    )
    assert json.loads((out / "report.json").read_text()) == r
    assert (out / "report.html").read_text().lstrip().lower().startswith("<!doctype html>")
    assert apply.read_text().startswith("#!/bin/sh\n") and undo.read_text().startswith("#!/bin/sh\n")
    path = tmp_path / "p.zpages"
    pages.save(path)
    cli_out, cli_undo = tmp_path / "cli", tmp_path / "cli-undo.sh"
    p = run_cli(
        zmem_bin, "lab", "--observe", "0", "--min-time-ms", "1", "--swap-device", "nvme",
        "-o", str(cli_out), "--undo-script", str(cli_undo), str(path),
    )
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in cli_out.iterdir()) == ["report.html", "report.json"]
    assert cli_undo.read_text() == undo.read_text()
