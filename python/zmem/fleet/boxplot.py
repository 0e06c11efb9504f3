"""The report's box plot of memory saved across hosts: an inline SVG (quartiles, median, one dot
per host), and the MiB figures the report writes."""

from __future__ import annotations


def _mib(b: float) -> str:
    return f"{b / (1 << 20):,.1f}"


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _box_svg(xs: list[float], lo: float, hi: float, width: int = 320) -> str:
    """A horizontal box plot (min, quartiles, median, max) of `xs` on the scale [lo, hi]."""
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return 10 + (v - lo) / span * (width - 20)

    q = [_quantile(xs, f) for f in (0, 0.25, 0.5, 0.75, 1)]
    zero = (
        f'<line x1="{x(0):.1f}" y1="0" x2="{x(0):.1f}" y2="24" stroke="#c00" '
        'stroke-dasharray="2,2"/>'
        if lo <= 0 <= hi
        else ""
    )
    dots = "".join(
        f'<circle cx="{x(v):.1f}" cy="12" r="2" fill="#555" fill-opacity="0.5"/>' for v in xs
    )
    return (
        f'<svg width="{width}" height="24" role="img" '
        f'aria-label="memory saved: median {_mib(q[2])} MiB">{zero}'
        f'<line x1="{x(q[0]):.1f}" y1="12" x2="{x(q[4]):.1f}" y2="12" stroke="#333"/>'
        f'<rect x="{x(q[1]):.1f}" y="5" width="{max(x(q[3]) - x(q[1]), 1):.1f}" height="14" '
        'fill="#9cf" stroke="#333"/>'
        f'<line x1="{x(q[2]):.1f}" y1="4" x2="{x(q[2]):.1f}" y2="20" stroke="#000" '
        f'stroke-width="2"/>{dots}</svg>'
    )
