"""zmem-fleet over evidence files mixed with captures: every host reported, evidence judged
with the judging options only (its host and labels from its own `host` map, hosts.csv over
them), and each host's input kind marked in the results and the report."""

from __future__ import annotations

import json
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import zmem
from zmem import fleet

# A measuring option (min_time_ms, max_pages) beside a judging one (cpu_budget).
LAB: dict[str, Any] = dict(min_time_ms=1, max_pages=256, cpu_budget=1000, progress=False)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    d = tmp_path_factory.mktemp("mixed")
    kinds = {}
    # Two captures: one named by its metadata, one by hosts.csv.
    zmem.PageSet.generate("mixed", pages=256, seed=1).with_metadata(
        {"host": "db-0", "label.role": "db"}
    ).save(d / "cap0.zpages")
    zmem.PageSet.generate("perf", pages=256, seed=2).save(d / "cap1.zpages")
    kinds.update({"db-0": "capture", "web-1": "capture"})
    # Three evidence files: host and label from the measured set's metadata; a host hosts.csv
    # overrides; none at all (named by the file).
    for i, meta in ((2, {"host": "db-2", "label.role": "db"}), (3, {"host": "old-3"}), (4, {})):
        ps = zmem.PageSet.generate("mixed", pages=256, seed=10 + i)
        if meta:
            ps = ps.with_metadata(meta)
        zmem.evidence(d / f"ev{i}.evidence", ps, observe=0, min_time_ms=1)
    kinds.update({"db-2": "evidence", "web-3": "evidence", "ev4": "evidence"})
    (d / "hosts.csv").write_text("capture,host,rack\ncap1.zpages,web-1,r1\nev3.evidence,web-3,r3\n")
    return d, kinds


@pytest.fixture(scope="module")
def mixed_run(ray_session, mixed, tmp_path_factory):
    d, _ = mixed
    out = tmp_path_factory.mktemp("mixed-out")
    with pytest.warns(UserWarning, match="min_time_ms") as caught:
        r = fleet.run([str(d)], str(out), **LAB)
    return r, out, caught


def test_every_host_with_its_input_kind(mixed_run, mixed) -> None:
    r, out, _ = mixed_run
    _, kinds = mixed
    assert not r.failures, r.failures
    assert sorted(r.hosts) == sorted(kinds)
    assert r.inputs == kinds
    t = pq.read_table(out / "results.parquet").to_pylist()
    assert {(x["host"], x["input_kind"]) for x in t} == set(kinds.items())
    assert all(x["capture"].endswith(".evidence") == (x["input_kind"] == "evidence") for x in t)
    # Host and labels: the evidence's own map, hosts.csv over it.
    assert {x["label.role"] for x in t if x["host"] == "db-2"} == {"db"}
    assert {x["label.rack"] for x in t if x["host"] == "web-3"} == {"r3"}
    assert "old-3" not in r.hosts
    # The judging option reached every host's judge, evidence and capture alike.
    for h, report in r.reports.items():
        assert report["budgets"]["cpu_percent_of_core"] == 1000, h
    html = (out / "report.html").read_text()
    assert "Inputs: 3 host(s) from evidence (no memory contents), 2 from raw captures" in html
    table = html.split("Input per host", 1)[1].split("</table>", 1)[0]
    assert "<td>web-1</td><td>capture (memory contents)</td>" in table, table
    assert "<td>db-2</td><td>evidence</td>" in table, table


def test_measuring_options_are_said_not_to_apply_to_evidence(mixed_run) -> None:
    r, out, caught = mixed_run
    assert len(r.notes) == 1, r.notes
    note = r.notes[0]
    assert "min_time_ms (--min-time-ms), max_pages (--max-pages)" in note, note
    assert "2 capture(s) only" in note and "3 evidence file(s)" in note, note
    assert "cpu_budget" not in note
    assert [str(w.message) for w in caught] == [f"zmem-fleet: {note}"]
    assert note in (out / "report.html").read_text().replace("&#x27;", "'")


def test_the_help_leads_with_evidence() -> None:
    text = fleet._parser().format_help()
    assert text.index("zmem evidence -o") < text.index("captures")
    assert "memory contents" in text
    judging = text.split("lab options that judge", 1)[1].split("lab options that measure", 1)[0]
    measuring = text.split("lab options that measure", 1)[1]
    assert "--cpu-budget" in judging and "--min-time-ms" not in judging
    assert "--min-time-ms" in measuring and "captures only" in measuring
    doc = fleet.__doc__ or ""
    assert doc.index("zmem evidence -o") < doc.index("Raw captures")


def test_an_evidence_file_is_told_by_its_first_bytes(mixed, tmp_path) -> None:
    d, _ = mixed
    assert fleet.input_kind(str(d / "ev2.evidence")) == "evidence"
    assert fleet.input_kind(f"file://{d / 'ev4.evidence'}") == "evidence"
    assert fleet.input_kind(str(d / "cap0.zpages")) == "capture"
    head = (d / "ev2.evidence").read_bytes()[: fleet._HOST_PREFIX]
    assert fleet.evidence_host(head) == {"host": "db-2", "label.role": "db"}
    assert fleet.evidence_host((d / "ev4.evidence").read_bytes()[:4096]) == {}
    # A prefix that ends inside the map, or text that is not evidence: no host, no error.
    assert fleet.evidence_host(head[:110]) == {}
    assert fleet.evidence_host(b"\x28\xb5\x2f\xfd garbage") == {}


def test_evidence_in_object_storage_is_copied_within_the_ceiling(mixed, monkeypatch) -> None:
    """An input pyarrow reads from elsewhere (here a SubTreeFileSystem standing in for s3://)
    is copied into the task's private directory and judged; past zmem's read ceiling it is
    refused unread, in the Rust reader's words."""
    d, _ = mixed
    remote = pafs.SubTreeFileSystem(str(d), pafs.LocalFileSystem())
    # judge_evidence looks _fs up in zmem.fleet.tasks, the module it lives in.
    monkeypatch.setattr(fleet.tasks, "_fs", lambda path: (remote, path.rsplit("/", 1)[-1]))
    got = fleet.judge_evidence("s3://bucket/ev2.evidence", {"cpu_budget": 1000})
    assert (got["host"], got["labels"], got["input_kind"]) == ("db-2", {"role": "db"}, "evidence")
    assert got["report"]["decision"]["kind"] == zmem.lab(
        evidence=d / "ev2.evidence", cpu_budget=1000
    )["decision"]["kind"]
    monkeypatch.setattr(zmem._native, "read_ceiling", lambda: 1000)
    with pytest.raises(ValueError, match=r"ev2.evidence: \d+ bytes, more than the read ceiling"):
        fleet.judge_evidence("s3://bucket/ev2.evidence", {})
    assert json.loads((d / "ev2.evidence").read_text())["host"]["host"] == "db-2"
