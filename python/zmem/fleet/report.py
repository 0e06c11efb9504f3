"""The fleet report (``OUT/report.html``): a self-contained HTML page, no scripts, no network.
The fleet-wide recommendation, memory saved per configuration across hosts, the hosts that want
something else, each host's operating point and input, the run's notes and the skipped
inputs."""

from __future__ import annotations

import html
import statistics
from typing import Any, Optional

from .boxplot import _box_svg, _mib
from .choice import FLEET_RULE, _host_answer, fleet_choice
from .results import FleetResult


def _budgets(result: FleetResult) -> tuple[float, float]:
    """The budgets the hosts were judged by, as their reports state them."""
    report = next(iter(result.reports.values()))
    b = report["budgets"]
    return float(b["cpu_percent_of_core"]), float(b["added_load_p99_us"])


def render_html(result: FleetResult, budgets: Optional[tuple[float, float]] = None) -> str:
    """The fleet report: a self-contained HTML page (no scripts, no network). ``budgets``:
    (CPU percent of a core, added p99 microseconds); None: those the hosts' reports state."""
    if budgets is None:
        budgets = _budgets(result) if result.reports else (float("nan"), float("nan"))
    e = html.escape
    table = result.results
    choice, stats = fleet_choice(table) if table.num_rows else (None, [])
    n = len(result.hosts)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>zmem fleet report</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:70em}"
        "table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px solid #ddd;"
        "text-align:right}td:first-child,th:first-child{text-align:left}"
        ".chosen{background:#efe}</style></head><body>",
        "<h1>zmem fleet report</h1>",
        f"<p>{n} host(s) analysed, {len(result.failures)} input(s) skipped; budgets: "
        f"{budgets[0]:g} % of a core, {budgets[1]:g} µs added p99 swap-in latency; "
        f"{result.seconds:.1f} s.</p>",
        f"<p>{_inputs_line(result.inputs)}</p>",
    ]
    if result.notes:
        parts.append("<h2>Notes</h2><ul>")
        parts += [f"<li>{e(note)}</li>" for note in result.notes]
        parts.append("</ul>")
    if choice is not None:
        best = next(s for s in stats if s["config"] == choice)
        parts += [
            "<h2>Fleet-wide recommendation</h2>",
            f"<p><b>{e(choice)}</b>: fits within the budgets on {best['fits']} of "
            f"{best['hosts']} hosts; saves {_mib(sum(best['saved']))} MiB over the fleet "
            f"(median {_mib(statistics.median(best['saved']))} MiB per host).</p>",
            f"<p><small>{e(FLEET_RULE)}</small></p>",
        ]
        lo = min(min(s["saved"]) for s in stats)
        hi = max(max(s["saved"]) for s in stats)
        lo, hi = min(lo, 0), max(hi, 0)
        parts += [
            "<h2>Memory saved per configuration, across hosts</h2>",
            "<p>Bytes saved against each host's current configuration (the dashed line is "
            "zero; box: quartiles, bar: median, dots: hosts).</p>",
            "<table><tr><th>configuration</th><th>hosts within budgets</th>"
            "<th>min MiB</th><th>median MiB</th><th>max MiB</th><th>total MiB</th>"
            "<th>distribution</th></tr>",
        ]
        for s in sorted(stats, key=lambda s: (-s["fits"], -sum(s["saved"]))):
            cls = " class='chosen'" if s["config"] == choice else ""
            parts.append(
                f"<tr{cls}><td>{e(s['config'])}</td><td>{s['fits']} / {s['hosts']}</td>"
                f"<td>{_mib(min(s['saved']))}</td><td>{_mib(statistics.median(s['saved']))}</td>"
                f"<td>{_mib(max(s['saved']))}</td><td>{_mib(sum(s['saved']))}</td>"
                f"<td>{_box_svg(s['saved'], lo, hi)}</td></tr>"
            )
        parts.append("</table>")
        parts.append("<h2>Hosts that want something else</h2>")
        answers = [(h, _host_answer(r)) for h, r in sorted(result.reports.items())]
        others = [(h, a) for h, a in answers if a["config"] != choice]
        if others:
            parts.append(
                "<table><tr><th>host</th><th>its own decision</th><th>saved MiB</th>"
                "<th>within budgets</th><th>why</th></tr>"
            )
            for h, a in others:
                parts.append(
                    f"<tr><td>{e(h)}</td><td>{e(a['config'])}</td>"
                    f"<td>{_mib(a['saved'])}</td><td>{a['within']}</td>"
                    f"<td style='text-align:left'><small>{e(a['why'])}</small></td></tr>"
                )
            parts.append("</table>")
        else:
            parts.append(f"<p>None: every host's own decision is {e(choice)}.</p>")
    if result.points:
        parts += _points_html(result.points)
    if result.inputs:
        parts += _inputs_html(result)
    parts.append("<h2>Skipped inputs</h2>")
    if result.failures:
        parts.append("<table><tr><th>input</th><th style='text-align:left'>why</th></tr>")
        for f in result.failures:
            parts.append(
                f"<tr><td>{e(f.capture)}</td><td style='text-align:left'>{e(f.error)}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>None.</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


POINT_NOTE = (
    "Each host's own decision at its operating point: with every page swapped (the figure "
    "above), at today's pressure (what the kernel's reclaim moves out now) and at the cold age "
    "T (everything idle for T moved out). Evidence carries what its host's observation window "
    "saw, so its host's point is its own. The fleet runs each capture as zmem lab FILE "
    "--observe 0, away from its machine: neither its pressure nor its cold curve is read, so "
    "its point is all_pages and the figures at today and at T are not known (—)."
)

INPUT_NOTE = {
    "evidence": "evidence (zmem evidence): page flags, compressed lengths and measured "
    "figures; no memory contents",
    "capture": "raw capture: memory contents (every resident page it read, with process ids, "
    "names and addresses)",
}


def _inputs_line(inputs: dict[str, str]) -> str:
    """How many hosts came from evidence and how many shipped memory contents."""
    evidence = sum(k == "evidence" for k in inputs.values())
    captures = len(inputs) - evidence
    return (
        f"Inputs: {evidence} host(s) from evidence (no memory contents), {captures} from raw "
        "captures (memory contents: every resident page, with process ids, names and "
        "addresses)."
    )


def _inputs_html(result: FleetResult) -> list[str]:
    """Each host's input: evidence, or a capture that carried its memory's contents."""
    e = html.escape
    files: dict[str, str] = {}
    cols = result.results.to_pydict() if result.results.num_rows else {}
    for h, c in zip(cols.get("host", []), cols.get("capture", [])):
        files.setdefault(h, c)
    parts = [
        "<h2>Input per host</h2>",
        f"<p><small>{e(INPUT_NOTE['evidence'])}; {e(INPUT_NOTE['capture'])}.</small></p>",
        "<table><tr><th>host</th><th>input</th><th style='text-align:left'>file</th></tr>",
    ]
    for h, kind in sorted(result.inputs.items()):
        shown = "capture (memory contents)" if kind == "capture" else kind
        parts.append(
            f"<tr><td>{e(h)}</td><td>{e(shown)}</td>"
            f"<td style='text-align:left'>{e(files.get(h, ''))}</td></tr>"
        )
    parts.append("</table>")
    return parts


def _points_html(points: dict[str, dict[str, Any]]) -> list[str]:
    """The table of each host's operating point; "—" where the lab did not read a figure."""
    e = html.escape

    def mib(v: Optional[int]) -> str:
        return "—" if v is None else _mib(v)

    parts = [
        "<h2>Operating point per host</h2>",
        f"<p><small>{e(POINT_NOTE)}</small></p>",
        "<table><tr><th>host</th><th>point</th><th>T s</th><th>cold at T MiB</th>"
        "<th>saved MiB, every page</th><th>at today MiB</th><th>at T MiB</th></tr>",
    ]
    for h, p in sorted(points.items()):
        t = "—" if p["cold_age_secs"] is None else str(p["cold_age_secs"])
        parts.append(
            f"<tr><td>{e(h)}</td><td>{e(str(p['operating_point'] or '—'))}</td><td>{t}</td>"
            f"<td>{mib(p['cold_bytes'])}</td><td>{mib(p['memory_saved_bytes'])}</td>"
            f"<td>{mib(p['memory_saved_at_today_bytes'])}</td>"
            f"<td>{mib(p['memory_saved_at_cold_age_bytes'])}</td></tr>"
        )
    parts.append("</table>")
    return parts
