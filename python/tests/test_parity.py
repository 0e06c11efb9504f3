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


def test_the_lab_defaults_are_the_clis(zmem_bin: str) -> None:
    """Same names and the same defaults where the help states one."""
    p = run_cli(zmem_bin, "lab", "--help")
    sig = inspect.signature(zmem.lab).parameters
    # One block per option: from its `--name` line to the next option's.
    blocks = re.split(r"\n(?=\s+(?:-\w, )?--)", p.stdout)
    checked = 0
    for block in blocks:
        m = re.match(r"\s+(?:-\w, )?--([a-z-]+)", block)
        d = re.search(r"\[default: ([^\]]+)\]", block)
        if not (m and d):
            continue
        name, default = m.group(1).replace("-", "_"), d.group(1)
        assert name in sig, name
        ours = sig[name].default
        try:
            assert float(ours) == float(default), (name, ours, default)
        except (TypeError, ValueError):
            assert str(ours) == default, (name, ours, default)
        checked += 1
    assert checked >= 5, p.stdout
