"""The engines through Python equal the CLI's --json on the same pages, and bad arguments raise
the CLI's one-line message."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pytest

import zmem
from conftest import cli_error, run_cli, same_error

# Fields measured with a clock: they differ from run to run, in the CLI as in Python.
TIMED = re.compile(r"(mbps|_ns$|_ns_|_us$|secs|seconds|cpu|latency|_per_sec)")


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pages") / "mixed.zpages"
    zmem.PageSet.generate("mixed", pages=300, seed=42).save(path)
    return path


def test_comp_bench_equals_the_cli(zmem_bin, page_file):
    algos = ["lzo", "lz4", "zstd:3", "deflate"]
    p = run_cli(zmem_bin, "comp-bench", "--json", "--min-time-ms", "1", "--algo", ",".join(algos), str(page_file))
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    t = zmem.comp_bench(zmem.PageSet.open(page_file), algos=algos, min_time_ms=1)
    assert isinstance(t, pa.Table)
    # Columns are the JSON's field names, in the JSON's order.
    assert t.column_names == list(cli[0].keys())
    # The rows asked for, after the memcpy baseline the table always starts with.
    assert t.num_rows == len(cli) and t.column("algo").to_pylist()[-len(algos) :] == algos
    ours = t.to_pylist()
    for mine, theirs in zip(ours, cli):
        for k, v in theirs.items():
            if TIMED.search(k):
                assert mine[k] >= 0, k  # memcpy frees nothing: its freeing speed is 0
            else:
                assert mine[k] == v, (theirs["algo"], k)
    assert all(r["verified"] and r["comp_mbps"] > 0 for r in ours)
    # Different pages give different sizes: the comparison is not vacuous.
    other = zmem.comp_bench(zmem.PageSet.generate("perf", pages=300, seed=1), algos=["lz4"], min_time_ms=1)
    lz4 = next(r for r in ours if r["algo"] == "lz4")
    assert other.column("compressed_bytes")[-1].as_py() != lz4["compressed_bytes"]
    assert t.to_pandas().shape == (len(cli), len(cli[0]))


def test_comp_bench_accepts_paths_and_arrays(page_file):
    ps = zmem.PageSet.open(page_file)
    a = zmem.comp_bench(str(page_file), algos=["lz4"], min_time_ms=1)
    b = zmem.comp_bench(ps.to_numpy(), algos=["lz4"], min_time_ms=1)
    assert a.column("compressed_bytes").to_pylist() == b.column("compressed_bytes").to_pylist()
    with pytest.raises(TypeError):
        zmem.comp_bench(12, algos=["lz4"])


def test_zram_run_equals_the_cli(zmem_bin, page_file):
    p = run_cli(zmem_bin, "zram", "--json", "--algo", "lz4", "--pool", "zsmalloc", str(page_file))
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    t = zmem.zram_run(page_file, algo="lz4", pool="zsmalloc")
    assert t.num_rows == 1 and t.column_names == list(cli.keys())
    row = t.to_pylist()[0]
    for k in ("mm_stat", "orig_data_size", "compr_data_size", "mem_used_total", "pages"):
        if k in cli:
            assert row[k] == cli[k], k
    assert row["verified"] is True


def test_study_allocators_has_one_row_per_allocator(page_file):
    t = zmem.study_allocators(page_file, rounds=1)
    assert sorted(t.column("allocator").to_pylist()) == ["z3fold", "zbud", "zsmalloc"]


def small_trace(zmem_bin, tmp_path):
    """3,000 accesses over 300 pages (`zmem trace gen`), for the replay tests."""
    trace = tmp_path / "t.trace"
    p = run_cli(zmem_bin, "trace", "gen", "--pages", "300", "--accesses", "3000", "-o", str(trace))
    if p.returncode != 0:
        pytest.fail(f"zmem trace gen: {p.stderr}")
    return trace


def replay_json(zmem_bin, page_file, trace, *args):
    """`zmem replay --json ARGS PAGES TRACE`'s object; the run must succeed."""
    cli = run_cli(zmem_bin, "replay", "--json", *args, str(page_file), str(trace))
    assert cli.returncode == 0, cli.stderr
    return json.loads(cli.stdout)


def test_replay_runs_a_trace(zmem_bin, page_file, tmp_path):
    trace = small_trace(zmem_bin, tmp_path)
    want = replay_json(zmem_bin, page_file, trace, "--ram", "400K", "--swap", "zram", "--algo", "lz4")
    t = zmem.replay(page_file, trace, "400K", swap="zram", algo="lz4")
    row = t.to_pylist()[0]
    assert t.column_names == list(want.keys())
    for k in ("swap_outs", "swap_ins", "accesses", "ram_pages"):
        if k in want:
            assert row[k] == want[k], k


def test_replay_takes_the_memcgs_cgroup_version_and_zswap_limit(zmem_bin, page_file, tmp_path):
    trace = small_trace(zmem_bin, tmp_path)
    args = ("--ram", "400K", "--swap", "zswap", "--cgroup", "v2", "--zswap-max", "64K")
    want = replay_json(zmem_bin, page_file, trace, *args)
    row = zmem.replay(page_file, trace, "400K", swap="zswap", cgroup="v2", zswap_max="64K")
    got = row.to_pylist()[0]
    for k in ("swap_outs", "swap_ins", "max_pool_bytes"):
        assert got[k] == want[k], k
    # memory.zswap.max is a cgroup v2 file: refused on v1, in the CLI's words.
    bad = run_cli(zmem_bin, "replay", "--ram", "400K", "--swap", "zswap", "--zswap-max", "64K",
                  str(page_file), str(trace))
    assert bad.returncode != 0 and "zswap" in bad.stderr, bad.stderr
    with pytest.raises(ValueError) as e:
        zmem.replay(page_file, trace, "400K", swap="zswap", zswap_max=65536)
    assert "memory.zswap.max" in str(e.value), e.value


def test_replay_takes_watermarks_as_the_cli_does(zmem_bin, page_file, tmp_path):
    trace = small_trace(zmem_bin, tmp_path)
    args = ("--ram", "400K", "--swap", "zram", "--watermarks", "16K,64K,96K")
    want = replay_json(zmem_bin, page_file, trace, *args)
    row = zmem.replay(page_file, trace, "400K", swap="zram", watermarks="16K,64K,96K")
    got = row.to_pylist()[0]
    assert want["kswapd_wakes"] > 0
    for k in ("swap_outs", "swap_ins", "kswapd_wakes", "kswapd_reclaimed", "direct_reclaimed"):
        assert got[k] == want[k], k
    # Marks out of order: refused, in the CLI's words.
    with pytest.raises(ValueError) as e:
        zmem.replay(page_file, trace, "400K", swap="zram", watermarks="64K,16K,96K")
    assert "do not hold" in str(e.value), e.value


def test_replay_reads_a_traces_page_cache_as_the_cli_does(zmem_bin, page_file, tmp_path):
    trace = tmp_path / "file.trace"
    p = run_cli(zmem_bin, "trace", "gen", "--pages", "300", "--accesses", "3000",
                "--file-pages", "400", "--file-fraction", "0.4", "-o", str(trace))
    assert p.returncode == 0, p.stderr
    want = replay_json(zmem_bin, page_file, trace, "--ram", "400K", "--swap", "zram")
    got = zmem.replay(page_file, trace, "400K", swap="zram").to_pylist()[0]
    assert want["file_refaults"] > 0
    for k in ("swap_outs", "swap_ins", "file_faults", "file_refaults", "file_evictions"):
        assert got[k] == want[k], k


def test_replay_takes_the_memcgs_swappiness_as_the_cli_does(zmem_bin, page_file, tmp_path):
    trace = small_trace(zmem_bin, tmp_path)
    args = ("--ram", "400K", "--swap", "zram", "--swappiness", "150")
    want = replay_json(zmem_bin, page_file, trace, *args)
    got = zmem.replay(page_file, trace, "400K", swap="zram", swappiness=150).to_pylist()[0]
    assert got["swappiness"] == want["swappiness"] == 150
    for k in ("swap_outs", "swap_ins"):
        assert got[k] == want[k], k
    # The machine's RAM zswap's pool is a share of, as --total-ram; bad sizes name it.
    zargs = ("--ram", "400K", "--swap", "zswap", "--max-pool-percent", "1", "--total-ram", "400K")
    want = replay_json(zmem_bin, page_file, trace, *zargs)
    got = zmem.replay(page_file, trace, "400K", swap="zswap", max_pool_percent=1,
                      total_ram="400K").to_pylist()[0]
    for k in ("swap_outs", "swap_ins", "counters"):
        assert got[k] == want[k], k
    with pytest.raises(ValueError) as bad:
        zmem.replay(page_file, trace, "400K", total_ram="lots")
    assert "total_ram" in str(bad.value), bad.value
    # At 0 a memcg's reclaim scans no anonymous page: out of memory, in the CLI's words.
    with pytest.raises(Exception) as e:
        zmem.replay(page_file, trace, "400K", swap="zram", swappiness=0)
    assert "swappiness 0" in str(e.value), e.value


def test_replay_takes_the_statistics_flush_as_the_cli_does(zmem_bin, page_file, tmp_path):
    trace = small_trace(zmem_bin, tmp_path)
    runs = {}
    for mode in ("always", "new-memcg"):
        args = ("--ram", "400K", "--swap", "zram", "--stats-flush", mode)
        want = replay_json(zmem_bin, page_file, trace, *args)
        got = zmem.replay(page_file, trace, "400K", swap="zram", stats_flush=mode).to_pylist()[0]
        for k in ("swap_outs", "swap_ins"):
            assert got[k] == want[k], (mode, k)
        runs[mode] = got
    # The default is the model validate checks: statistics current before every reclaim.
    default = zmem.replay(page_file, trace, "400K", swap="zram").to_pylist()[0]
    assert default["swap_outs"] == runs["always"]["swap_outs"]
    with pytest.raises(ValueError) as bad:
        zmem.replay(page_file, trace, "400K", stats_flush="sometimes")
    assert "stats_flush" in str(bad.value) and "new-memcg" in str(bad.value), bad.value


# Bad arguments: the exception's message is the CLI's line (after `zmem: `).


def test_unknown_algorithm_raises_the_cli_message(zmem_bin, page_file):
    want = cli_error(zmem_bin, "comp-bench", "--algo", "nope", str(page_file))
    with pytest.raises(ValueError) as e:
        zmem.comp_bench(page_file, algo="nope")
    same_error(str(e.value), want)
    want = cli_error(zmem_bin, "comp-bench", "--algo", "zstd:x", str(page_file))
    with pytest.raises(ValueError) as e:
        zmem.comp_bench(page_file, algos=["zstd:x"])
    same_error(str(e.value), want)


def test_missing_file_raises_oserror_with_the_cli_message(zmem_bin, tmp_path):
    missing = tmp_path / "missing.zpages"
    want = cli_error(zmem_bin, "comp-bench", str(missing))
    with pytest.raises(OSError) as e:
        zmem.PageSet.open(missing)
    assert str(e.value) == want


def test_corrupt_file_raises_zmem_error_with_the_cli_message(zmem_bin, page_file, tmp_path):
    bad = tmp_path / "bad.zpages"
    data = bytearray(page_file.read_bytes())
    data[len(data) // 2] ^= 0x55  # a page no longer matches its checksum
    bad.write_bytes(bytes(data))
    want = cli_error(zmem_bin, "comp-bench", str(bad))
    with pytest.raises(zmem.Error) as e:
        zmem.PageSet.open(bad)
    assert str(e.value) == want
    assert not isinstance(e.value, (ValueError, OSError))


def test_bad_budgets_and_sizes_raise_the_cli_message(zmem_bin, page_file, tmp_path):
    want = cli_error(zmem_bin, "lab", "--cpu-budget=-1", "--observe", "0", str(page_file))
    with pytest.raises(ValueError) as e:
        zmem.lab(page_file, cpu_budget=-1, observe=0)
    same_error(str(e.value), want)
    trace = tmp_path / "t.trace"
    assert run_cli(zmem_bin, "trace", "gen", "--pages", "300", "--accesses", "100", "-o", str(trace)).returncode == 0
    want = cli_error(zmem_bin, "replay", "--ram", "12Q", str(page_file), str(trace))
    with pytest.raises(ValueError) as e:
        zmem.replay(page_file, trace, "12Q")
    same_error(str(e.value), want)
    want = cli_error(zmem_bin, "zram", "--pool", "nopool", str(page_file))
    with pytest.raises((ValueError, zmem.Error)) as bad_pool:
        zmem.zram_run(page_file, pool="nopool")
    same_error(str(bad_pool.value), want)


def test_a_string_where_a_list_is_expected_is_one_item(page_file):
    one = zmem.comp_bench(page_file, algo="lz4", min_time_ms=1)
    assert one.column("algo").to_pylist()[-1] == "lz4"
    assert one.num_rows == 2  # memcpy and lz4, not one row per letter


def test_negative_counts_are_value_errors():
    with pytest.raises(ValueError, match="pages=-1"):
        zmem.PageSet.generate(pages=-1)
    with pytest.raises(ValueError):
        zmem.zram_run(zmem.PageSet.generate(pages=8), threads=-1)


def test_the_long_algorithm_form_is_accepted(page_file):
    a = zmem.comp_bench(page_file, algo=["zstd:3"], min_time_ms=1)
    b = zmem.comp_bench(page_file, algo=["zstd:level=3"], min_time_ms=1)
    assert a.column("ratio").to_pylist() == b.column("ratio").to_pylist()
    with pytest.raises(ValueError, match="out of range"):
        zmem.replay(page_file, "unused.trace", "1M", algo="zstd:99")
