"""`zmem.status`, `zmem.dict_train`, `zmem.validate_replay` and `zmem.validate_lab`: each run
with only its required arguments (as `crates/cli/tests/entry_points.rs` runs every command),
each returning what `zmem ... --json` prints and refusing what the CLI refuses, in Python's
words. The validations need root, kernel zram and a memory cgroup: skipped, with the reason
printed, where this machine lacks them; they hold the live lock every live test takes
(zmem-testkit's `/tmp/zmem-live.lock`), so they never overlap another's swap areas."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

import zmem
from conftest import cli_error, run_cli, same_error

LIVE_LOCK = "/tmp/zmem-live.lock"


def _no_live_kernel() -> str | None:
    """Why this machine cannot run a validation, or None."""
    if os.geteuid() != 0:
        return "not root"
    if not Path("/sys/class/zram-control").exists():
        return "no kernel zram (/sys/class/zram-control)"
    if not Path("/sys/fs/cgroup").is_dir():
        return "no cgroup file system (/sys/fs/cgroup)"
    return None


@pytest.fixture
def live_kernel():
    """The live lock, held for the test; skipped (reason printed) without the kernel's zram."""
    why = _no_live_kernel()
    if why is not None:
        print(f"skipped: {why}")
        pytest.skip(why)
    with open(LIVE_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def small(tmp_path_factory, zmem_bin):
    """The entry-point test's inputs: 256 mixed pages and a 4000-access trace over them."""
    d = tmp_path_factory.mktemp("kernel-jobs")
    pages = d / "pages.zpages"
    zmem.PageSet.generate("mixed", pages=256, seed=7).save(pages)
    trace = d / "pages.trace"
    p = run_cli(zmem_bin, "trace", "gen", "--pages", "256", "--accesses", "4000", "-o", str(trace))
    assert p.returncode == 0, p.stderr
    return pages, trace


def swaps() -> str:
    return Path("/proc/swaps").read_text()


def test_status_has_the_clis_fields(zmem_bin):
    ours = zmem.status()
    p = run_cli(zmem_bin, "status", "--json", "--interval", "0")
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    assert ours.keys() == cli.keys()
    assert ours["page_size"] == cli["page_size"] == os.sysconf("SC_PAGE_SIZE")
    # The default interval (1 s) gives rates; 0 gives none, as `--interval 0`.
    assert zmem.status(interval=0)["rates"] is None and cli["rates"] is None
    assert ours["rates"] is not None


def test_status_refuses_a_bad_interval(zmem_bin):
    with pytest.raises(ValueError) as e:
        zmem.status(interval=-1)
    assert str(e.value) == "interval must be a number of seconds >= 0"
    with pytest.raises(TypeError):
        zmem.status(interval="soon")  # type: ignore[arg-type]


def test_dict_train_writes_what_the_cli_writes(zmem_bin, small, tmp_path):
    pages, _ = small
    ours = zmem.dict_train(pages, "zstd", tmp_path / "py.dict")
    cli_out = tmp_path / "cli.dict"
    p = run_cli(zmem_bin, "dict", "train", "--algo", "zstd", "--json", "-o", str(cli_out), str(pages))
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    # The same dictionary, trained on the same pages with the same defaults.
    assert (tmp_path / "py.dict").read_bytes() == cli_out.read_bytes()
    assert ours.keys() == cli.keys()
    assert ours["dict"] == str(tmp_path / "py.dict")
    assert ours["algorithm_params"] == cli["algorithm_params"].replace("cli.dict", "py.dict")
    assert (ours["trained_on_pages"], ours["measured_on"]) == (256, "training pages")
    for k, v in cli["effect"].items():
        if isinstance(v, int) and not isinstance(v, bool):
            assert ours["effect"][k] == v, k
    held = zmem.dict_train(pages, "lz4", tmp_path / "h.dict", holdout=True, size="16K")
    assert held["measured_on"] == "other half" and held["trained_on_pages"] == 128
    assert (tmp_path / "h.dict").stat().st_size <= 16 << 10


def test_dict_train_refuses_as_the_cli_does(zmem_bin, small, tmp_path):
    pages, _ = small
    out = str(tmp_path / "x.dict")
    with pytest.raises(ValueError) as e:
        zmem.dict_train(pages, "lzo", out)
    same_error(str(e.value), cli_error(zmem_bin, "dict", "train", "--algo", "lzo", "-o", out, str(pages)))
    with pytest.raises(ValueError) as e:
        zmem.dict_train(pages, "zstd", out, size="12Q")
    same_error(str(e.value), cli_error(zmem_bin, "dict", "train", "--algo", "zstd", "--size", "12Q", "-o", out, str(pages)))
    with pytest.raises(ValueError, match="samples=0"):
        zmem.dict_train(pages, "zstd", out, samples=0)
    with pytest.raises(OSError) as oe:
        zmem.dict_train(pages, "zstd", "/nonexistent/zmem/x.dict")
    same_error(str(oe.value), cli_error(zmem_bin, "dict", "train", "--algo", "zstd", "-o", "/nonexistent/zmem/x.dict", str(pages)))


def test_validate_refuses_before_the_kernel(zmem_bin, small, tmp_path):
    """Checked before anything is made, so these run anywhere: the CLI's words."""
    pages, trace = small
    with pytest.raises(ValueError) as e:
        zmem.validate_replay(pages, trace, ram=100)
    assert str(e.value) == "ram=100 is less than one page"
    same_error(str(e.value).replace("ram=100 ", ""), cli_error(zmem_bin, "validate", "replay", "--ram", "100", str(pages), str(trace)).replace("--ram 100 ", ""))
    with pytest.raises(ValueError) as e:
        zmem.validate_replay(pages, trace, algo="zstd:3")
    same_error(str(e.value), cli_error(zmem_bin, "validate", "replay", "--algo", "zstd:3", str(pages), str(trace)))
    with pytest.raises(ValueError, match="kernel_runs=0"):
        zmem.validate_lab(pages, kernel_runs=0)
    with pytest.raises(OSError) as oe:
        zmem.validate_replay(pages, tmp_path / "missing.trace")
    same_error(str(oe.value), cli_error(zmem_bin, "validate", "replay", str(pages), str(tmp_path / "missing.trace")))
    with pytest.raises(ValueError, match="4096-byte pages"):
        zmem.validate_replay(zmem.PageSet.generate(pages=8, page_size=8192), trace)
    with pytest.raises(FileNotFoundError, match="player"):
        zmem.validate_replay(pages, trace, player=tmp_path / "no-zmem")


def test_validate_replay_with_its_required_arguments(zmem_bin, small, live_kernel):
    """Its required arguments only, as the CLI's entry-point test: 256 pages, 4000 accesses
    (a few seconds), the player the `zmem` binary ($ZMEM_BIN)."""
    pages, trace = small
    before = swaps()
    r = zmem.validate_replay(pages, trace)
    assert r["verified"] and r["kernel"].keys() == r["zmem"].keys(), r
    assert r["setup"]["touched_pages"] <= 256 and r["setup"]["accesses"] == 4000, r["setup"]
    assert swaps() == before, "a swap area left behind"


def test_validate_lab_with_its_required_arguments(zmem_bin, small, live_kernel):
    """Its required argument only (the pages; the lab's own trace), on 256 pages: every
    candidate this kernel runs, `kernel_runs` times each."""
    pages, _ = small
    before = swaps()
    r = zmem.validate_lab(pages)
    assert r["configurations"], r
    assert all(c["verified"] for c in r["configurations"])
    assert swaps() == before, "a swap area left behind"
