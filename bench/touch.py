# A process to record: writes the first W of its N pages every 50 ms for T seconds, then prints
# the median and p90 time of one sweep (docs/BENCHMARKS.md, recording by page-out sampling).
# Usage: python3 bench/touch.py N W T
import sys, time
N, W, T = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
buf = bytearray(N * 4096)
for p in range(N):
    buf[p * 4096] = 1
print("ready", flush=True)
sweeps = []
end = time.time() + T
k = 0
while time.time() < end:
    t = time.perf_counter()
    for p in range(0, W):
        buf[p * 4096 + 8] = (buf[p * 4096 + 8] + 1) & 255
    sweeps.append(time.perf_counter() - t)
    k += 1
    time.sleep(0.05)
sweeps.sort()
print(f"sweeps {len(sweeps)} median {sweeps[len(sweeps)//2]*1e3:.3f} ms p90 {sweeps[int(len(sweeps)*0.9)]*1e3:.3f} ms per {W} pages")
