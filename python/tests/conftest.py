"""Shared fixtures: the `zmem` CLI the bindings are compared with, small page sets, and one
local Ray for the session (started only by the tests that need it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def zmem_bin() -> str:
    """The CLI: $ZMEM_BIN (scripts/test sets it), else target/debug/zmem, built if missing."""
    path = os.environ.get("ZMEM_BIN") or str(ROOT / "target" / "debug" / "zmem")
    if not os.path.exists(path):
        cargo = shutil.which("cargo")
        if cargo is None:
            pytest.fail(f"{path} is missing and cargo is not on PATH to build it")
        subprocess.run([cargo, "build", "--quiet", "-p", "zmem"], cwd=ROOT, check=True)
    return path


def run_cli(zmem_bin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([zmem_bin, *args], capture_output=True, text=True)


def cli_error(zmem_bin: str, *args: str) -> str:
    """The CLI's one-line error for `args` (what follows `zmem: `); it must fail with status 2."""
    p = run_cli(zmem_bin, *args)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.startswith("zmem: ")]
    assert len(lines) == 1, p.stderr
    return lines[0][len("zmem: ") :]


def same_error(python_message: str, cli_message: str) -> None:
    """Python says what the CLI says, in Python's terms: the CLI's words after its flag
    (`--algo: `, `--ram: `) are in the Python message, which names no command-line flag."""
    core = re.sub(r"^--[a-z-]+( \S+)?: ", "", cli_message)
    assert core in python_message, (python_message, cli_message)
    assert "--" not in python_message, python_message


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for every fleet test, two CPUs (the CI machine's), stopped at the end."""
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
            object_store_memory=128 << 20,
        )
    yield ray
    ray.shutdown()
