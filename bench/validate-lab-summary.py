#!/usr/bin/env python3
"""Markdown rows of a `zmem validate lab --json` result, zram and zswap configurations, with the
goals of issue 43 (pool 5 %, swap-ins 20 %, CPU 25 %, same order, zswap fields 10 %) marked.
Usage: bench/validate-lab-summary.py RUN.json [LABEL]"""
import json
import sys


def pct(e):
    return "n/a" if e is None else f"{e * 100:+.1f} %"


def mark(e, goal):
    return "" if e is None or abs(e) <= goal else " (miss)"


v = json.load(open(sys.argv[1]))
label = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
s = v["setup"]
print(f"{label}: {s['pages']} pages ({s['touched_pages']} touched), {s['accesses']} accesses, "
      f"RAM {s['ram_bytes']} bytes, {s['kernel_runs']} kernel run(s) per configuration")
print()
print("| config | peak pool lab / kernel | err | swap-outs lab / kernel | swap-ins lab / kernel | err "
      "| CPU s lab / kernel | err |")
print("|---|---|---|---|---|---|---|---|")
for c in v["configurations"]:
    p, k, e = c["predicted"], c["kernel"], c["error"]
    print(f"| {c['config']} | {p['peak_pool_bytes']} / {k['peak_pool_bytes']} | "
          f"{pct(e['peak_pool_bytes'])}{mark(e['peak_pool_bytes'], 0.05)} | "
          f"{p['swap_outs']} / {k['swap_outs']} | {p['swap_ins']} / {k['swap_ins']} | "
          f"{pct(e['swap_ins'])}{mark(e['swap_ins'], 0.20)} | "
          f"{p['cpu_seconds']:.3f} / {k['cpu_seconds']:.3f} | "
          f"{pct(e['cpu_seconds'])}{mark(e['cpu_seconds'], 0.25)} |")
print()
print(f"order by memory: lab {' < '.join(v['lab_order'])}; kernel {' < '.join(v['kernel_order'])}; "
      f"same_order {v['same_order']}")
z = v.get("zswap")
if not z:
    sys.exit(0)
print()
fields = ["stored_pages", "pool_total_size", "peak_pool_total_size", "written_back_pages",
          "zswpout", "zswpin", "zswpwb", "disk_reads", "disk_writes", "swap_ins", "cpu_seconds"]
goal = {"swap_ins": 0.20, "cpu_seconds": 0.25}
print("| config | " + " | ".join(fields) + " |")
print("|---|" + "---|" * len(fields))
for c in z["configurations"]:
    p, k, e = c["predicted"], c["kernel"], c["error"]
    cells = []
    for f in fields:
        if f == "cpu_seconds":
            cells.append(f"{p[f]:.3f} / {k[f]:.3f} ({pct(e[f])}){mark(e[f], goal[f])}")
        else:
            cells.append(f"{p[f]} / {k[f]} ({pct(e[f])}){mark(e[f], goal.get(f, 0.10))}")
    print(f"| {c['config']} | " + " | ".join(cells) + " |")
    r = c["kernel_run"]
    print(f"|  (kernel run) | foreign_pages_bound {r['foreign_pages_bound']}, cgroup swap pages "
          f"{r['cgroup_swap_pages']}, params_restored {r['params_restored']}, pool from "
          f"{r['pool_source']}, runs' swap-ins {c['kernel_runs_swap_ins']}, zswpin "
          f"{c.get('kernel_runs_zswpin', '-')}, swap_ra {c.get('kernel_runs_swap_ra', '-')}; "
          f"swap_ra predicted {p.get('swap_ra', '-')} |" + " |" * (len(fields) - 1))
vd = z.get("verdict")
if vd:
    print()
    print(f"verdict: {vd['zram_config']} vs {vd['zswap_config']}: lab picks {vd['lab_pick']}, "
          f"kernel's better: {vd['kernel_served_better']} (agree: {vd['agree']}); "
          f"lab (pool, swap-ins) {vd['lab_figures']}, kernel {vd['kernel_figures']}")
