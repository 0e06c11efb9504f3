#!/usr/bin/env python3
"""Compares two `zmem lab --json` reports on the same pages in every field that is not a timing.

    bench/lab-same-results.py BEFORE.json AFTER.json

Dropped: speeds, seconds, CPU times, latencies (and their histograms), and what follows from
them alone: the candidates' projected CPU and latency costs, which budgets they are over, and
the recommendation's figures and the sentence quoting them. Everything else (pages, bytes,
pools, ratios, counts, swap-outs and swap-ins, verification, the chosen policy, the apply
lines) must be equal. Prints each difference; exit status 1 if there is any.
"""
import json
import sys

TIMED = {
    # speeds
    "comp_mbps", "decomp_mbps", "freeing_mbps", "write_mbps",
    # seconds and CPU times
    "write_seconds", "recompress_seconds", "cpu_seconds", "cpu_seconds_per_gb",
    "compress_cpu_ns_per_page", "decompress_cpu_ns_per_page", "recompress_cpu_ns_per_page",
    "cpu_secs_per_sec", "added_cpu_secs_per_sec", "first_pass_cpu_secs",
    # latencies
    "load_latency", "store_p99_ns", "load_p50_ns", "load_p99_ns", "hit_p50_ns", "hit_p99_ns",
    "device_p50_ns", "device_p99_ns", "added_load_p50_ns", "added_load_p99_ns",
    "load_latency_p50_ns", "load_latency_p99_ns",
    # judgements of the timings against the budgets, and the sentence quoting them
    "over_budget", "within_budgets", "why",
    # the zswap candidates' swap-in time per second and the verdict's sentence quoting it
    "swap_in_us_per_sec", "reason",
    # the decision's timed figures (schema 5)
    "cpu_seconds_per_second", "swap_in_p50_ns", "swap_in_p99_ns",
}


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in TIMED}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'after' if k not in a else 'before'}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} before, {b!r} after")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = (strip(json.load(open(p))) for p in sys.argv[1:])
    out = []
    diff(before, after, "", out)
    for line in out:
        print(line)
    fields = sum(1 for _ in walk(before))
    print(f"{len(out)} differences in {fields} untimed fields")
    sys.exit(1 if out else 0)


def walk(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from walk(x)
    elif isinstance(v, list):
        for x in v:
            yield from walk(x)
    else:
        yield v


if __name__ == "__main__":
    main()
