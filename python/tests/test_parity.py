"""One front door: every option of a `zmem` command the package binds is a keyword argument of
its function, with the same name (dashes as underscores). A flag added to the CLI without its
Python twin fails here.

Options that are the CLI's own output formats have no twin: `--json` (the functions return the
value: a dict or an Arrow table) and `--help`; `comp-bench --list` is `zmem.algorithms()`.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
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
    # Where the set goes is PageSet.save's (output, zstd, raw); --pid is `pids`, a list.
    (["gen"], zmem.PageSet.generate, {"output", "zstd", "raw"}),
    (["capture"], zmem.PageSet.capture, {"output", "zstd", "verbose", "pid"}),
    (["dict", "train"], zmem.dict_train, set()),
    (["status"], zmem.status, set()),
    (["validate", "replay"], zmem.validate_replay, set()),
    (["validate", "lab"], zmem.validate_lab, set()),
]

# Each job: its command, the package's function and the extension's that take its options.
JOBS: dict[str, tuple[list[str], list[Callable[..., Any]]]] = {
    # The extension's `lab` takes the options as **options, through the lab's table
    # (test_lab_options.py holds it and `zmem.lab`'s signature to that table).
    "lab": (["lab"], [zmem.lab]),
    "comp-bench": (["comp-bench"], [zmem.comp_bench, zmem._native.comp_bench]),
    "zram": (["zram"], [zmem.zram_run, zmem._native.zram_run]),
    "replay": (["replay"], [zmem.replay, zmem._native.replay]),
    "study allocators": (["study", "allocators"], [zmem.study_allocators, zmem._native.study_allocators]),
    "capture": (["capture"], [zmem.PageSet.capture]),
    "gen": (["gen"], [zmem.PageSet.generate]),
    "dict train": (["dict", "train"], [zmem.dict_train, zmem._native.dict_train]),
    "status": (["status"], [zmem.status, zmem._native.status]),
    "validate replay": (["validate", "replay"], [zmem.validate_replay, zmem._native.validate_replay]),
    "validate lab": (["validate", "lab"], [zmem.validate_lab, zmem._native.validate_lab]),
}

PACKAGE = Path(zmem.__file__).parent


def help_defaults(zmem_bin: str, command: list[str]) -> dict[str, str]:
    """The `[default: X]` each option of `zmem COMMAND --help` states, by Python name."""
    p = run_cli(zmem_bin, *command, "--help")
    assert p.returncode == 0, p.stderr
    stated = {}
    for block in re.split(r"\n(?=\s+(?:-\w, )?--)", p.stdout):
        m = re.match(r"\s+(?:-\w, )?--([a-z-]+)", block)
        d = re.search(r"\[default: ([^\]]+)\]", block)
        if m and d:
            stated[m.group(1).replace("-", "_")] = d.group(1)
    return stated


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


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_jobs_defaults_are_the_clis_and_python_states_none(zmem_bin: str, job: str) -> None:
    """One place for defaults: what `zmem JOB --help` states is the request's own
    (`zmem.defaults(JOB)`, read from the Rust request's Default), and neither the package's
    function nor the extension's gives a keyword argument a default of its own (None, or False
    for a flag, is the request's default)."""
    command, funcs = JOBS[job]
    stated = help_defaults(zmem_bin, command)
    assert stated == zmem.defaults(job), (job, stated, zmem.defaults(job))
    for func in funcs:
        params = inspect.signature(func).parameters
        for name in stated:
            if name == "page_size" and job not in ("gen",) and func.__module__ != "zmem":
                continue  # the page set's own; `page_size` of a raw file in the package
            assert name in params, (job, func, name)
        for name, p in params.items():
            if p.default is not inspect.Parameter.empty:
                assert p.default in (None, False), (job, func.__qualname__, name, p.default)


def test_none_stands_for_the_requests_default(zmem_bin: str, tmp_path) -> None:
    """A keyword left at None runs as the CLI with no flag: the same pages, configured alike."""
    a = zmem.PageSet.generate(pages=3, seed=None)
    b = zmem.PageSet.generate(pages=3, seed=int(zmem.defaults("gen")["seed"]))
    assert a.tobytes() == b.tobytes()
    out = tmp_path / "gen.zpages"
    p = run_cli(zmem_bin, "gen", "--pages", "3", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert zmem.PageSet.open(out).tobytes() == a.tobytes()
    t = zmem.zram_run(a).to_pylist()[0]
    assert t["algo"] == zmem.defaults("zram")["algo"] and t["pool"] == zmem.defaults("zram")["pool"]


# Names of arguments that are the package's own, with no CLI option and no request field.
OWN = {"label"}


def test_every_job_is_bound() -> None:
    """Every job with a request has its function here, and `zmem.defaults` knows each."""
    for job in JOBS:
        assert isinstance(zmem.defaults(job), dict), job
    with pytest.raises(ValueError, match="validate lab"):
        zmem.defaults("frobnicate")


@pytest.mark.parametrize("stub", ["_native.pyi", "__init__.py"])
def test_the_stubs_and_wrappers_state_no_defaults(stub: str) -> None:
    """`_native.pyi` and `__init__.py` hold no defaults: every keyword argument is None (or
    False for a flag) there, the request in Rust fills it."""
    tree = ast.parse((PACKAGE / stub).read_text())
    checked = 0
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
            continue
        a = node.args
        pairs = list(zip(a.args[len(a.args) - len(a.defaults) :], a.defaults)) + [
            (k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None
        ]
        for arg, default in pairs:
            checked += 1
            if arg.arg in OWN:
                continue
            ok = isinstance(default, ast.Constant) and default.value in (None, False)
            assert ok, f"{stub}: {node.name}({arg.arg}={ast.unparse(default)})"
    assert checked >= 20, checked
