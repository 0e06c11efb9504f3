#!/usr/bin/env python3
"""Where a `zmem exporter` scrape's time goes, from the stderr of an exporter built with
bench/exporter-scrape-timing.patch and run with ZMEM_SCRAPE_TIMING=1 (bench/exporter-advise-
zswap.sh keeps it with ERRDIR=DIR). Per part, microseconds: queue (the request handed to the
blocking thread until that thread runs: scheduling), read (the kernel's counters), fam (their
families), snap (the advisor's last judgement taken), adv (its families), enc (encoding), total
(the scrape's own work), handler (queue + total + the runtime thread woken again).
Usage: bench/exporter-scrape-parts.py base.err adv.err"""
import sys


def parse(path):
    rows, cur = [], {}
    for line in open(path):
        w = line.split()
        if len(w) < 3 or w[0] != "TIMING":
            continue
        if w[1] == "queue":
            cur = {"queue": int(w[2])}
        elif w[1] == "read":
            it = iter(w[1:])
            cur.update({k: int(v) for k, v in zip(it, it)})
        elif w[1] == "handler":
            cur["handler"] = int(w[2])
            rows.append(cur)
            cur = {}
    return rows


for path in sys.argv[1:]:
    rows = parse(path)
    print(f"{path}: {len(rows)} scrapes, server side, microseconds")
    for k in ["queue", "read", "fam", "snap", "adv", "enc", "total", "handler"]:
        v = sorted(r.get(k, 0) for r in rows)
        if not v:
            continue
        n = len(v)
        over1 = sum(1 for x in v if x > 1000)
        over5 = sum(1 for x in v if x > 5000)
        print(f"  {k:8} p50 {v[n // 2]:6} p99 {v[int(n * 0.99)]:6} max {v[-1]:6}"
              f"  over 1 ms {over1:4}  over 5 ms {over5:4}")
