"""Huge, negative and wrong-typed numbers to every numeric argument of every function: a
ValueError (or TypeError for a non-number) naming the argument, never an abort, a panic or an
OverflowError. A deterministic sweep over the boundary values."""

from __future__ import annotations

import pytest

import zmem

BAD = [-1, -(2**63), 10**12 * 4096, 2**62, 2**64, 10**40]


@pytest.fixture(scope="module")
def pages() -> zmem.PageSet:
    return zmem.PageSet.generate("mixed", pages=16, seed=1)


def calls(pages: zmem.PageSet, trace: str):
    """(function name, argument name, a call taking the value)."""
    yield "generate", "pages", lambda v: zmem.PageSet.generate("mixed", pages=v)
    yield "generate", "page_size", lambda v: zmem.PageSet.generate("mixed", pages=1, page_size=v)
    yield "generate", "seed", lambda v: zmem.PageSet.generate("mixed", pages=1, seed=v)
    yield "builtin", "page_size", lambda v: zmem.PageSet.builtin(page_size=v)
    yield "from_bytes", "page_size", lambda v: zmem.PageSet.from_bytes(b"x" * 4096, page_size=v)
    yield "capture", "pids", lambda v: zmem.PageSet.capture(pids=[v])
    yield "comp_bench", "min_time_ms", lambda v: zmem.comp_bench(pages, min_time_ms=v)
    yield "zram_run", "threads", lambda v: zmem.zram_run(pages, threads=v)
    for arg in ["max_pool_percent", "accept_threshold_percent", "page_cluster", "swappiness"]:
        yield "replay", arg, lambda v, a=arg: zmem.replay(pages, trace, ram="32K", **{a: v})
    yield "replay", "ram", lambda v: zmem.replay(pages, trace, ram=v)
    yield "study_allocators", "rounds", lambda v: zmem.study_allocators(pages, rounds=v)
    for arg in ["observe", "sample", "threads", "min_time_ms", "cpu_budget", "latency_budget"]:
        yield "lab", arg, lambda v, a=arg: zmem.lab(pages, **{a: v})


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> str:
    # A trace file that exists; the bad argument is refused before it is read.
    p = tmp_path_factory.mktemp("t") / "t.trace"
    p.write_bytes(b"")
    return str(p)


def test_every_numeric_argument_refuses_huge_and_negative_values_by_name(
    pages: zmem.PageSet, trace: str
) -> None:
    checked = 0
    for func, arg, call in calls(pages, trace):
        for v in BAD:
            if arg in ("seed", "ram", "max_pool_percent", "accept_threshold_percent") and 0 <= v < 2**64:
                continue  # any u64 is a valid seed, RAM size or kernel percentage
            if arg in ("cpu_budget", "latency_budget") and v >= 0:
                continue  # a budget may be as large as one likes
            with pytest.raises(ValueError) as e:
                call(v)
                pytest.fail(f"{func}({arg}={v}) was accepted")
            assert arg in str(e.value), f"{func}({arg}={v}): {e.value}"
            assert not isinstance(e.value, OverflowError), f"{func}({arg}={v})"
            assert "panicked" not in str(e.value) and "\n" not in str(e.value)
            checked += 1
    assert checked >= 90, checked


def test_wrong_types_are_type_errors(pages: zmem.PageSet) -> None:
    with pytest.raises(TypeError, match="threads"):
        zmem.zram_run(pages, threads="many")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pages"):
        zmem.PageSet.generate("mixed", pages=1.5)  # type: ignore[arg-type]


def test_an_unknown_pool_is_one_value_error_said_once(pages: zmem.PageSet) -> None:
    with pytest.raises(ValueError) as e:
        zmem.zram_run(pages, pool="slab")
    msg = str(e.value)
    assert "slab" in msg and "zsmalloc" in msg, msg
    assert msg.count("unknown allocator") == 1, msg


def test_a_directory_or_device_as_pages_is_named(tmp_path) -> None:
    with pytest.raises(ValueError, match="a directory"):
        zmem.PageSet.open(str(tmp_path))
    with pytest.raises(ValueError, match="a character device"):
        zmem.PageSet.open("/dev/null")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="an empty file"):
        zmem.PageSet.open(str(empty))
