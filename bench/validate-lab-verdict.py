#!/usr/bin/env python3
"""The verdict check of `zmem validate lab --zswap` (crates/validate/src/zswap_lab.rs,
`verdict_check`: served better = the smaller peak pool unless its swap-in wait, swap-ins x p50,
is more than 20 % (+1 us) longer; pools within 1 % a tie), recomputed from a run's JSON: for runs
made before the rule took its final form. Usage: bench/validate-lab-verdict.py RUN.json..."""
import json,sys
def better(z,w):
    zw=z[1]*z[2]; ww=w[1]*w[2]
    if ww > zw*1.2+1000: return "zram"
    if zw > ww*1.2+1000: return "zswap"
    a,b=z[0],w[0]
    if abs(a-b) <= 0.01*max(a,b): return "tie"
    return "zram" if a<b else "zswap"
for f in sys.argv[1:]:
    v=json.load(open(f))
    z=min(v['configurations'], key=lambda c:(c['predicted']['peak_pool_bytes'],c['config']))
    lz=(z['predicted']['peak_pool_bytes'],z['predicted']['swap_ins'],z['predicted']['swap_in_p50_ns'])
    kz=(z['kernel']['peak_pool_bytes'],z['kernel_run']['timed_swap_ins'],z['kernel']['swap_in_p50_ns'])
    lw=lambda w:(w['predicted']['peak_pool_total_size'],w['predicted']['swap_ins'],w['predicted']['swap_in_p50_ns'])
    rank={"zswap":0,"tie":1,"zram":2}
    def key(w):
        r=rank[better(lz,lw(w))]
        return (r, lw(w)[1]*lw(w)[2] if r==2 else w['predicted']['peak_pool_total_size'], w['config'])
    w=min(v['zswap']['configurations'], key=key)
    kw=(w['kernel']['peak_pool_total_size'],w['kernel']['swap_ins'],w['kernel']['swap_in_p50_ns'])
    print(f, z['config'], '|', w['config'], 'lab', better(lz,lw(w)), lz, lw(w), 'kernel', better(kz,kw), kz, kw)
