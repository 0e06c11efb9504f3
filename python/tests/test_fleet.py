"""zmem-fleet on local Ray: 8 captures, one corrupt; the Parquet file, its schema, the report."""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import zmem
from zmem import fleet

LAB: dict[str, Any] = dict(min_time_ms=1, max_pages=256, progress=False)


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    d = tmp_path_factory.mktemp("captures")
    hosts = []
    for i in range(7):
        kind = "perf" if i % 3 == 0 else "mixed"
        ps = zmem.PageSet.generate(kind, pages=256, seed=100 + i)
        name = f"cap{i}.zpages"
        if i < 4:
            # Host and labels in the page set's metadata.
            ps = ps.with_metadata({"host": f"db-{i}", "label.role": "db"})
            hosts.append(f"db-{i}")
        else:
            hosts.append(f"web-{i}")  # from hosts.csv below
        ps.save(d / name)
    (d / "hosts.csv").write_text(
        "capture,host,rack\n" + "".join(f"cap{i}.zpages,web-{i},r{i}\n" for i in range(4, 7))
    )
    # The eighth: a page set with a damaged page (its checksum no longer matches).
    bad = bytearray((d / "cap0.zpages").read_bytes())
    bad[len(bad) // 2] ^= 0x55
    (d / "cap7-corrupt.zpages").write_bytes(bytes(bad))
    return d, hosts


@pytest.fixture(scope="module")
def fleet_run(ray_session, captures, tmp_path_factory):
    d, _ = captures
    out = tmp_path_factory.mktemp("fleet-out")
    return fleet.run([str(d)], str(out), **LAB), out


def test_seven_hosts_and_the_corrupt_capture_listed(fleet_run, captures):
    r, out = fleet_run
    d, hosts = captures
    t = pq.read_table(out / "results.parquet")
    assert sorted(set(t.column("host").to_pylist())) == sorted(hosts)
    assert len(r.failures) == 1
    assert r.failures[0].capture.endswith("cap7-corrupt.zpages")
    assert "Error" in r.failures[0].error
    html = (out / "report.html").read_text()
    assert "cap7-corrupt.zpages" in html
    assert r.recommendation is not None and r.recommendation in html
    # Labels: metadata for the db hosts, hosts.csv for the web ones.
    rows = t.to_pylist()
    assert {x["label.role"] for x in rows if x["host"].startswith("db-")} == {"db"}
    assert {x["label.rack"] for x in rows if x["host"] == "web-5"} == {"r5"}


def test_parquet_schema(fleet_run):
    r, out = fleet_run
    t = pq.read_table(out / "results.parquet")
    report = next(iter(r.reports.values()))
    # The candidate's fields, its figures at the operating points flat after them.
    nested = fleet.AT_POINT_COLUMNS
    cand_fields = [k for k in report["candidates"][0] if k != "name" and k not in nested]
    cand_fields += list(nested.values())
    names = t.column_names
    assert names[:2] == ["host", "config"]
    assert names[2 : 2 + len(cand_fields)] == cand_fields
    assert not set(nested) & set(names), names
    for column in [*nested.values(), "cold_age_secs", "cold_bytes"]:
        assert t.schema.field(column).type == pa.int64(), column
    assert t.schema.field("operating_point").type == pa.string()
    s = t.schema
    assert s.field("host").type == pa.string() and s.field("config").type == pa.string()
    assert s.field("memory_saved_bytes").type == pa.int64()
    assert s.field("pool_bytes").type == pa.int64()
    assert s.field("within_budgets").type == pa.bool_()
    assert s.field("cpu_secs_per_sec").type == pa.float64()
    assert pa.types.is_list(s.field("over_budget").type)
    assert s.field("kind").type == pa.string()
    assert s.field("recommended").type == pa.bool_()
    # One row per host x candidate (the candidates depend on the pages: a dictionary
    # candidate only where one helps), and each host's own choice marked once.
    assert t.num_rows == sum(len(x["candidates"]) for x in r.reports.values())
    for h in set(t.column("host").to_pylist()):
        mine = [x for x in t.to_pylist() if x["host"] == h]
        assert [x["config"] for x in mine] == [c["name"] for c in r.reports[h]["candidates"]]
        assert sum(x["recommended"] for x in mine) == 1
        assert {x["config"] for x in mine if x["recommended"]} == {fleet.host_choice(r.reports[h])}
        # The host's own decision, found by identity: its index among the candidates.
        d = r.reports[h]["decision"]
        if d["chosen"] is not None:
            marked = [x for x in mine if x["recommended"]][0]
            assert mine.index(marked) == d["chosen"]
            assert d["config"] == marked["config"], (d["config"], marked["config"])


def test_the_fleets_hosts_are_at_every_page_swapped(fleet_run):
    """The fleet runs each capture with observe=0, away from its machine: the lab names the
    all_pages point and reads neither today's pressure nor a cold curve, so every figure at a
    point is None, in the results and per host, beside the every-page saving."""
    r, out = fleet_run
    t = pq.read_table(out / "results.parquet").to_pylist()
    for h, report in r.reports.items():
        assert report["decision"]["operating_point"]["named"] == "all_pages", h
        p = r.points[h]
        assert p["operating_point"] == "all_pages"
        unread = ("cold_age_secs", "cold_bytes", *fleet.AT_POINT_COLUMNS.values())
        assert {k: p[k] for k in unread} == dict.fromkeys(unread)
        assert p["memory_saved_bytes"] == report["decision"]["all_pages_saved_bytes"]
        for row in (x for x in t if x["host"] == h):
            assert row["operating_point"] == "all_pages"
            assert all(row[k] is None for k in unread), row
    assert "Operating point per host" in (out / "report.html").read_text()


def test_the_fleet_choice_follows_its_rule(fleet_run):
    r, _ = fleet_run
    choice, stats = fleet.fleet_choice(r.results)
    assert choice == r.recommendation
    best = max(stats, key=lambda s: (s["fits"], sum(s["saved"])))
    assert best["config"] == choice
    for s in stats:
        assert s["hosts"] == sum(
            any(c["name"] == s["config"] for c in rep["candidates"]) for rep in r.reports.values()
        )
        assert 0 <= s["fits"] <= s["hosts"] <= 7


def test_a_missing_capture_is_listed_not_fatal(ray_session, captures, tmp_path):
    d, _ = captures
    missing = str(d / "nope.zpages")
    r = fleet.run([str(d / "cap1.zpages"), missing], None, retries=0, **LAB)
    assert r.hosts == ["db-1"]
    assert [f.capture for f in r.failures] == [missing]
    assert r.failures[0].error.startswith(("OSError", "FileNotFoundError"))


def test_inputs_expand_from_globs_lists_and_files(captures, tmp_path):
    d, _ = captures
    every = fleet.expand([str(d)])
    assert len(every) == 8 and not any(c.endswith(".csv") for c in every)
    assert fleet.expand([str(d / "cap[0-2].zpages")]) == [str(d / f"cap{i}.zpages") for i in range(3)]
    lst = tmp_path / "list.txt"
    lst.write_text(f"{d / 'cap1.zpages'}\n# a comment\n{d / 'cap2.zpages'}\n")
    assert fleet.expand([f"@{lst}"]) == [str(d / "cap1.zpages"), str(d / "cap2.zpages")]
    pair = f"{d / 'cap1.zpages'},{d / 'cap3.zpages'}"
    assert fleet.expand([pair, str(d / "cap1.zpages")]) == [str(d / "cap1.zpages"), str(d / "cap3.zpages")]
    assert fleet.expand([f"file://{d}"]) == [f"file://{c}" for c in every]


def test_command_line_errors_are_one_line(tmp_path, capsys):
    assert fleet.main([str(tmp_path / "none-*.zpages"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zmem-fleet: no captures or evidence files found")
    assert fleet.main([str(tmp_path), "--out", str(tmp_path / "o"), "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err


def test_a_run_that_analysed_nothing_fails_in_one_line(ray_session, tmp_path, capsys):
    # Before: "zmem-fleet: 0 hosts, 1 skipped" and exit 0, with an empty report written.
    out = tmp_path / "o"
    assert fleet.main(["/nonexistent", "--out", str(out), "--retries", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("zmem-fleet: no input could be analysed (1 failed; first: /nonexistent")
    assert not (out / "results.parquet").exists()


def test_the_command_with_only_its_required_arguments(ray_session, captures, tmp_path, capsys):
    # Before: every run without --max-pages and --min-time-ms failed in each task with
    # "TypeError: 'NoneType' object cannot be interpreted as an integer" (None passed to zmem.lab).
    d, _ = captures
    out = tmp_path / "o"
    assert fleet.main([str(d / "cap1.zpages"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "zmem-fleet: 1 hosts, 0 skipped" in err, err
    table = pq.read_table(out / "results.parquet")
    assert table.num_rows > 0 and set(table.column("host").to_pylist()) == {"db-1"}
    assert (out / "report.html").read_text().startswith("<!doctype html>")


def test_the_console_entry_point_with_only_its_required_arguments(captures, tmp_path):
    """`zmem-fleet DIR --out OUT` as a user types it: the script pyproject.toml installs, in a
    process of its own (its own Ray), with every option at its default."""
    import os
    import shutil
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(sys.executable), "zmem-fleet")
    if not os.path.exists(script):
        script = shutil.which("zmem-fleet") or ""
    if not script:
        pytest.skip("zmem-fleet is not installed (maturin develop installs it)")
    d, _ = captures
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(d / "cap2.zpages", one / "cap2.zpages")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    p = subprocess.run(
        [script, str(one), "--out", str(out)], capture_output=True, text=True, env=env, timeout=600
    )
    assert p.returncode == 0, p.stderr
    assert "zmem-fleet: 1 hosts, 0 skipped" in p.stderr, p.stderr
    assert pq.read_table(out / "results.parquet").num_rows > 0
    html = (out / "report.html").read_text()
    # The budgets the report states are the lab's defaults (none of the fleet's own).
    lab = zmem.defaults("lab")
    assert f"budgets: {float(lab['cpu_budget']):g} % of a core" in html, html[:600]


# ---------------------------------------------------------------------------------------------
# The operating point of a host's report (schema 8), without Ray


def _at(saved: int) -> dict[str, Any]:
    return {"moved_out_bytes": 2 * saved, "pool_bytes": saved, "memory_saved_bytes": saved,
            "memory_saved_ci": [saved, saved]}


def _candidate(name: str, saved: int, today: Optional[int], cold: Optional[int]) -> dict[str, Any]:
    """A candidate as the lab writes it: every-page saving, and at the points where given."""
    c: dict[str, Any] = {"name": name, "kind": "zram", "available": True, "within_budgets": True,
                         "pool_bytes": 1 << 20, "memory_saved_bytes": saved, "over_budget": []}
    if today is not None:
        c["at_today"] = _at(today)
    if cold is not None:
        c["at_cold_age"] = _at(cold)
    return c


def _host_report(op: Optional[dict[str, Any]], cands: list[dict[str, Any]], chosen: int,
                 kind: str = "zram") -> dict[str, Any]:
    d: dict[str, Any] = {"kind": kind, "config": cands[chosen]["name"], "chosen": chosen,
                         "reason": {"kind": "most_saved"},
                         "memory_saved_bytes": cands[chosen]["memory_saved_bytes"]}
    if op is not None:
        d["operating_point"] = op
        d["all_pages_saved_bytes"] = cands[chosen]["memory_saved_bytes"]
        # The headline at the named point, unlike the every-page figure.
        d["memory_saved_bytes"] = -1
    return {"decision": d, "candidates": cands}


def _today(reason: str) -> dict[str, Any]:
    return {"reason": {"kind": reason}, "moved_out_bytes": 0, "available_bytes": None,
            "free_bytes": 0, "low_watermark_bytes": 0, "high_watermark_bytes": 0,
            "psi_some_avg10": None, "psi_some_avg60": None}


MIB = 1 << 20
COLD = {"age_secs": 120, "anon_bytes": 8 * MIB, "cold_bytes": 5 * MIB, "ages_secs": [60, 120],
        "cold_bytes_at_age": [6 * MIB, 5 * MIB], "promoted_bytes_per_sec": 0.0,
        "promotion_bound": False, "promotion_percent_per_min": 0.0}


def _cold_host() -> dict[str, Any]:
    """A host's own `zmem lab --json`: memory short today, a cold curve reaching T = 120 s; it
    chose its second candidate (the first has other figures, to tell them apart)."""
    op = {"named": "cold_age", "today": _today("short"), "cold": COLD, "compressibility": "x"}
    cands = [_candidate("zram lz4", 2 * MIB, MIB // 2, MIB),
             _candidate("zram zstd", 3 * MIB, MIB, 2 * MIB),
             _candidate("none", 0, 0, 0)]
    return _host_report(op, cands, 1)


def _fleet_host() -> dict[str, Any]:
    """A capture the fleet ran (observe=0): the all_pages point, no pressure, no cold curve;
    the report's today is zeros, which are not a saving."""
    op = {"named": "all_pages", "today": _today("no_reading"),
          "cold_unseen": "no cold curve was read", "compressibility": "x"}
    cands = [_candidate("zram zstd", 3 * MIB, 0, None), _candidate("none", 0, 0, None)]
    return _host_report(op, cands, 0)


def test_a_host_with_a_cold_age_has_its_decisions_savings_there() -> None:
    p = fleet.host_point(_cold_host())
    assert p == {"operating_point": "cold_age", "cold_age_secs": 120, "cold_bytes": 5 * MIB,
                 "memory_saved_bytes": 3 * MIB, "memory_saved_at_today_bytes": MIB,
                 "memory_saved_at_cold_age_bytes": 2 * MIB}
    # Keeping what runs saves nothing at any point read.
    keep = _cold_host()
    keep["decision"]["kind"] = "keep"
    p = fleet.host_point(keep)
    assert (p["memory_saved_at_today_bytes"], p["memory_saved_at_cold_age_bytes"]) == (0, 0)


def test_a_host_without_a_cold_age_has_none_at_the_points() -> None:
    """The fleet's own hosts (all_pages, nothing read) and a report before schema 8 (no
    point, no figures at one): None, never the report's zeros; every page swapped stays."""
    unread = ("cold_age_secs", "cold_bytes", "memory_saved_at_today_bytes",
              "memory_saved_at_cold_age_bytes")
    p = fleet.host_point(_fleet_host())
    assert p["operating_point"] == "all_pages" and p["memory_saved_bytes"] == 3 * MIB
    assert {k: p[k] for k in unread} == dict.fromkeys(unread)
    old: dict[str, Any] = {
        "decision": {"kind": "zram", "config": "zram zstd", "chosen": 0,
                     "memory_saved_bytes": 3 * MIB},
        "candidates": [{"name": "zram zstd", "memory_saved_bytes": 3 * MIB}],
    }
    p = fleet.host_point(old)
    assert p["operating_point"] is None and p["memory_saved_bytes"] == 3 * MIB
    assert {k: p[k] for k in unread} == dict.fromkeys(unread)
    with pytest.raises(ValueError, match="not an operating point"):
        fleet.saved_at(old["candidates"][0], None, "tomorrow")


def _cells(*cells: object) -> str:
    return "".join(f"<td>{c}</td>" for c in cells)


def test_the_results_and_report_carry_each_hosts_point() -> None:
    done = [{"capture": f"{h}.zpages", "host": h, "labels": {}, "report": r}
            for h, r in (("cold", _cold_host()), ("fleet", _fleet_host()))]
    r = fleet._gather(done, [], {})
    assert r.points == {"cold": fleet.host_point(_cold_host()),
                        "fleet": fleet.host_point(_fleet_host())}
    rows = {(x["host"], x["config"]): x for x in r.results.to_pylist()}
    lz4 = rows[("cold", "zram lz4")]
    at = (lz4["memory_saved_at_today_bytes"], lz4["memory_saved_at_cold_age_bytes"])
    assert at == (MIB // 2, MIB)
    point = (lz4["operating_point"], lz4["cold_age_secs"], lz4["cold_bytes"])
    assert point == ("cold_age", 120, 5 * MIB)
    zstd = rows[("fleet", "zram zstd")]
    assert zstd["memory_saved_bytes"] == 3 * MIB and zstd["operating_point"] == "all_pages"
    assert zstd["memory_saved_at_today_bytes"] is None and zstd["cold_bytes"] is None
    assert "at_today" not in r.results.column_names
    # A fleet of its own hosts only: the columns keep their types with every value None.
    alone = fleet._gather(done[1:], [], {}).results
    assert alone.schema.field("memory_saved_at_cold_age_bytes").type == pa.int64()
    assert alone.schema.field("cold_age_secs").type == pa.int64()
    page = fleet.render_html(r, budgets=(1.0, 100.0))
    table = page.split("Operating point per host", 1)[1].split("</table>", 1)[0]
    assert _cells("cold", "cold_age", 120, "5.0", "3.0", "1.0", "2.0") in table, table
    assert _cells("fleet", "all_pages", "—", "—", "3.0", "—", "—") in table, table
