"""What a fleet run produced (:class:`FleetResult`, :class:`Failure`) and how the tasks' answers
become it: one row per host x candidate configuration in a pyarrow Table, each host named once
(its ``hosts.csv`` row, its own metadata, else its file name), with its labels, input kind,
operating point and its own choice marked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import pyarrow as pa

from .choice import fleet_choice, host_choice
from .inputs import _base_name, _stem
from .points import HOST_POINT_COLUMNS, _typed, candidate_columns, host_point


@dataclass
class Failure:
    """An input (evidence file or capture) the fleet could not analyse, and why (the error's
    one line)."""

    capture: str
    error: str


@dataclass
class FleetResult:
    """What one fleet run produced."""

    results: pa.Table
    hosts: list[str]
    failures: list[Failure]
    recommendation: Optional[str]
    out: Optional[str] = None
    seconds: float = 0.0
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Per host, :func:`host_point`: its operating point and its decision's savings there.
    points: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Per host, its input: "evidence" (no memory contents) or "capture" (memory contents).
    inputs: dict[str, str] = field(default_factory=dict)
    # What the run says beside the results: the options that did not apply to every host.
    notes: list[str] = field(default_factory=list)


def _gather(
    done: list[dict[str, Any]], failures: list[Failure], csv_hosts: dict[str, dict[str, str]]
) -> FleetResult:
    rows: list[dict[str, Any]] = []
    hosts: list[str] = []
    reports: dict[str, dict[str, Any]] = {}
    points: dict[str, dict[str, Any]] = {}
    inputs: dict[str, str] = {}
    used: set[str] = set()
    for d in sorted(done, key=lambda d: d["capture"]):
        c = d["capture"]
        extra = dict(csv_hosts.get(c, {}))
        host = extra.pop("host", None) or d["host"] or _stem(c)
        if host in used:
            # Two captures of one host: both kept, told apart by the file name.
            host = f"{host} ({_base_name(c)})"
        used.add(host)
        labels = {**d["labels"], **extra}
        report = d["report"]
        reports[host] = report
        hosts.append(host)
        kind = d.get("input_kind", "capture")
        inputs[host] = kind
        chosen = host_choice(report)
        point = host_point(report)
        points[host] = point
        op = report["decision"].get("operating_point")
        for cand in report["candidates"]:
            row = {"host": host, "config": cand["name"]}
            row.update(candidate_columns(cand, op))
            row["recommended"] = cand["name"] == chosen
            row["capture"] = c
            row["input_kind"] = kind
            row.update({k: point[k] for k in HOST_POINT_COLUMNS})
            for k, v in sorted(labels.items()):
                row[f"label.{k}"] = v
            rows.append(row)
    # Every column any row has (labels differ between hosts), in order of first appearance:
    # from_pylist alone would take the first row's keys only.
    names = list(dict.fromkeys(k for row in rows for k in row))
    table = (
        _typed(pa.Table.from_pylist([{k: row.get(k) for k in names} for row in rows]))
        if rows
        else _empty_table()
    )
    return FleetResult(
        results=table,
        hosts=hosts,
        failures=failures,
        recommendation=fleet_choice(table)[0] if rows else None,
        reports=reports,
        points=points,
        inputs=inputs,
    )


def _empty_table() -> pa.Table:
    return pa.table({"host": pa.array([], pa.string()), "config": pa.array([], pa.string())})
