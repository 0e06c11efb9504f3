"""One front door: every option of a `zmem` command the package binds is a keyword argument of
its function, with the same name (dashes as underscores). A flag added to the CLI without its
Python twin fails here.

Options that are the CLI's own output formats have no twin: `--json` (the functions return the
value: a dict or an Arrow table) and `--help`; `comp-bench --list` is `zmem.algorithms()`.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable

import pytest

import zmem
from conftest import run_cli

# The CLI's own: output formats and help.
CLI_ONLY = {"json", "help", "version"}

BOUND: list[tuple[list[str], Callable[..., Any], set[str]]] = [
    (["lab"], zmem.lab, set()),
    (["comp-bench"], zmem.comp_bench, {"list"}),
    (["zram"], zmem.zram_run, set()),
    (["replay"], zmem.replay, set()),
    (["study", "allocators"], zmem.study_allocators, set()),
]


def cli_options(zmem_bin: str, command: list[str]) -> set[str]:
    """The long options `zmem COMMAND --help` lists, as Python names."""
    p = run_cli(zmem_bin, *command, "--help")
    assert p.returncode == 0, p.stderr
    names = set(re.findall(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]*)", p.stdout, re.M))
    assert names, p.stdout
    return {n.replace("-", "_") for n in names}


@pytest.mark.parametrize("command,func,mapped", BOUND, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_cli_option_is_a_keyword_argument(
    zmem_bin: str, command: list[str], func: Callable[..., Any], mapped: set[str]
) -> None:
    params = set(inspect.signature(func).parameters)
    missing = cli_options(zmem_bin, command) - CLI_ONLY - mapped - params
    assert not missing, f"zmem {' '.join(command)} has options zmem.{func.__name__} lacks: {sorted(missing)}"


def test_the_lab_defaults_are_the_librarys(zmem_bin: str, tmp_path) -> None:
    """One place for defaults: the package states none of its own (every option the CLI gives
    a default is None or False here), and None gives what the CLI's help states, as the report
    shows it."""
    p = run_cli(zmem_bin, "lab", "--help")
    sig = inspect.signature(zmem.lab).parameters
    blocks = re.split(r"\n(?=\s+(?:-\w, )?--)", p.stdout)
    stated = {}
    for block in blocks:
        m = re.match(r"\s+(?:-\w, )?--([a-z-]+)", block)
        d = re.search(r"\[default: ([^\]]+)\]", block)
        if m and d:
            stated[m.group(1).replace("-", "_")] = d.group(1)
    assert len(stated) >= 5, p.stdout
    for name in stated:
        assert name in sig, name
        assert sig[name].default in (None, False), (name, sig[name].default)
    pages = zmem.PageSet.generate("mixed", pages=64, seed=2)
    r = zmem.lab(pages, observe=0, min_time_ms=1, swap_device="nvme")
    assert r["budgets"]["cpu_percent_of_core"] == float(stated["cpu_budget"])
    assert r["budgets"]["added_load_p99_us"] == float(stated["latency_budget"])
