"""The answers: each host's own (the candidate its lab's decision chose; the fleet never judges a
host again) and the fleet's (:data:`FLEET_RULE`: the configuration that fits within the budgets
on the most hosts, then the one saving the most memory over the fleet)."""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa


def host_choice(report: dict[str, Any]) -> str:
    """The host's own answer: the candidate its lab decision chose (``decision.chosen``, an
    index into ``candidates``, zram's, zswap's or "none"); where the decision chose none (too
    few pages, or a kernel that runs no candidate), the decision's ``config``. The fleet never
    judges a host again: the host's one judge did."""
    d = report["decision"]
    i = d.get("chosen")
    cands = report["candidates"]
    if i is not None and 0 <= i < len(cands):
        return cands[i]["name"]
    return d["config"]


def _host_answer(report: dict[str, Any]) -> dict[str, Any]:
    """What the "hosts that want something else" table shows of a host's own answer."""
    d = report["decision"]
    i = d.get("chosen")
    reason = d.get("reason") or {}
    why = str(reason.get("kind", "")).replace("_", " ")
    if reason.get("by"):
        why += f", broken by {str(reason['by']).replace('_', ' ')}"
    runner = d.get("runner_up")
    if runner is not None:
        why += f"; runner-up {report['candidates'][runner]['name']}"
    within = i is not None and bool(report["candidates"][i]["within_budgets"])
    # Every page swapped (schema 8's decision figures its own at the operating point).
    saved = d.get("all_pages_saved_bytes", d["memory_saved_bytes"])
    return {"config": host_choice(report), "saved": saved, "within": within, "why": why}


FLEET_RULE = (
    "The fleet-wide choice is the configuration that fits within the budgets (verified, "
    "available on the host's kernel, within the CPU and latency budgets) on the most hosts; "
    "among those, the one saving the most memory summed over every host."
)


def per_config(table: pa.Table) -> list[dict[str, Any]]:
    """Per configuration: hosts it fits, and memory saved across hosts (bytes vs now)."""
    cols = table.to_pydict()
    by: dict[str, dict[str, Any]] = {}
    for i, cfg in enumerate(cols["config"]):
        s = by.setdefault(cfg, {"config": cfg, "saved": [], "fits": 0, "hosts": 0})
        s["saved"].append(cols["memory_saved_bytes"][i])
        s["hosts"] += 1
        fits = cols["within_budgets"][i] and cols.get("available", [True] * len(cols["config"]))[i]
        s["fits"] += bool(fits)
    return list(by.values())


def fleet_choice(table: pa.Table) -> tuple[Optional[str], list[dict[str, Any]]]:
    stats = per_config(table)
    if not stats:
        return None, stats
    best = max(stats, key=lambda s: (s["fits"], sum(s["saved"])))
    return best["config"], stats
