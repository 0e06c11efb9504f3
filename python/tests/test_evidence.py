"""`zmem.evidence` and `zmem.lab(evidence=...)`: the lab's measurements written without the
pages, judged elsewhere to the same answer as the pages themselves; each door takes only the
options of its phase."""

from __future__ import annotations

import base64
import inspect
import json
import os
import stat
from typing import Any

import pytest

import zmem
from conftest import cli_error, run_cli, same_error

# Generous budgets: every verified candidate fits, so the choice rests on memory alone and
# does not depend on how busy the machine was while each side measured.
BUDGETS: dict[str, Any] = dict(cpu_budget=1000, latency_budget=1e6)
CLI_BUDGETS = ("--cpu-budget", "1000", "--latency-budget", "1000000")
# Enough pages for a decision (fewer than 1024 are too few to advise on).
PAGES = 1024


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("evidence")
    pages = zmem.PageSet.generate("mixed", pages=PAGES, seed=3)
    path = d / "host.zpages"
    pages.save(path)
    ev = d / "host.evidence"
    summary = zmem.evidence(ev, path, observe=0, min_time_ms=0)
    return pages, path, ev, summary


def _figures(report: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Each candidate's untimed figures: its name, pool and memory saved."""
    return [(c["name"], c["pool_bytes"], c["memory_saved_bytes"]) for c in report["candidates"]]


def test_evidence_judges_to_the_same_answer_as_the_pages(made, zmem_bin) -> None:
    pages, path, ev, summary = made
    assert summary["path"] == ev and summary["pages"] == PAGES
    assert summary["pids"] is False and summary["names"] is False
    assert "zstd" in summary["codecs"] and "lz4" in summary["codecs"]
    judged = zmem.lab(evidence=ev, **BUDGETS)
    measured = zmem.lab(path, observe=0, min_time_ms=0, **BUDGETS)
    assert _figures(judged) == _figures(measured)
    assert len(judged["candidates"]) > 10
    # Equal savings are broken by clearly less CPU, a clock's measure: there the two runs
    # (measured apart) may differ; any other decision rests on the figures compared above.
    by_cpu = lambda r: (r["decision"].get("reason") or {}).get("by") == "less_cpu"  # noqa: E731
    if not (by_cpu(judged) or by_cpu(measured)):
        d, m = judged["decision"], measured["decision"]
        assert (d["kind"], d["config"]) == (m["kind"], m["config"])
    assert judged["decision"]["kind"] != "none", judged["decision"]
    # A path to evidence given as the pages is judged as evidence (`zmem lab FILE`'s rule),
    # and the CLI's judge of the same file says exactly the same: one judge, no clock.
    assert zmem.lab(str(ev), **BUDGETS) == judged
    p = run_cli(zmem_bin, "lab", "--json", *CLI_BUDGETS, str(ev))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == judged


def test_evidence_is_private_and_holds_no_page(made) -> None:
    pages, _, ev, _ = made
    assert stat.S_IMODE(os.stat(ev).st_mode) == 0o600
    data = ev.read_bytes()
    f = json.loads(data)
    assert f["format"] == "zmem-evidence" and f["identifies"] == {"pids": False, "names": False}
    assert len(f["facts"]["flags"]) == PAGES
    a = pages.to_numpy()
    checked = 0
    for row in a:
        page = row.tobytes()
        if page == page[:8] * (len(page) // 8):
            continue  # same-filled: its one word is what evidence's flag says
        checked += 1
        mid = page[2048 : 2048 + 32]
        assert mid not in data
        assert base64.b64encode(page)[:64] not in data
        assert page[:32].hex().encode() not in data
    assert checked > PAGES // 2


# Options that measure, each refused with evidence in the CLI's words.
MEASURING: list[tuple[str, Any]] = [
    ("min_time_ms", 1), ("observe", 0), ("max_pages", 512), ("source", "builtin"),
    ("swap_device", "nvme"),
]


@pytest.mark.parametrize("name,value", MEASURING, ids=lambda v: str(v))
def test_a_measuring_option_with_evidence_is_refused(made, zmem_bin, name, value) -> None:
    _, _, ev, _ = made
    with pytest.raises(ValueError) as e:
        zmem.lab(evidence=ev, **{name: value})
    msg = str(e.value)
    assert msg.startswith(f"{name}: measures pages"), msg
    if name == "source":
        return  # the CLI's clap refuses --source beside a file first, in its own words
    flag = "--" + name.replace("_", "-")
    same_error(msg, cli_error(zmem_bin, "lab", flag, str(value), str(ev)))


def test_the_evidence_door_takes_the_measuring_options_only(made, tmp_path) -> None:
    pages, _, ev, _ = made
    judging = {o["name"] for o in zmem.lab_options() if o["judges"]}
    assert judging == {"no_proactive", "exclude", "cpu_budget", "latency_budget", "promotion_budget"}
    out = tmp_path / "x.evidence"
    judging_given: list[tuple[str, Any]] = [
        ("cpu_budget", 1), ("no_proactive", True), ("exclude", "sshd")
    ]
    for name, value in judging_given:
        with pytest.raises(ValueError, match=rf"^{name}: judges the findings"):
            zmem.evidence(out, pages, observe=0, **{name: value})
    assert not out.exists()
    with pytest.raises(TypeError, match="evidence\\(\\) got an unexpected keyword argument 'x'"):
        zmem.evidence(out, pages, x=1)
    with pytest.raises(ValueError, match="give pages or evidence, not both"):
        zmem.lab(pages, evidence=ev)
    # The signature and docs list each measuring option, and none that judges.
    params = inspect.signature(zmem.evidence).parameters
    for o in zmem.lab_options():
        assert (o["name"] in params) is (not o["judges"]), o["name"]
    assert "``min_time_ms``" in (zmem.evidence.__doc__ or "")
    # Judging options reach the judge: budgets of nothing leave no candidate within them.
    tight = zmem.lab(evidence=ev, cpu_budget=0, latency_budget=0)
    assert tight["budgets"]["cpu_percent_of_core"] == 0
    with pytest.raises(OSError):
        zmem.lab(evidence=tmp_path / "missing.evidence")
    bad = tmp_path / "bad.evidence"
    bad.write_text('{"format":"zmem-evidence","version":1}')
    with pytest.raises(ValueError, match="bad.evidence"):
        zmem.lab(evidence=bad)
