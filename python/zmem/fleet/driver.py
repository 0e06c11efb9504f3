"""The fleet run (:func:`run`, behind ``zmem-fleet``): Ray started or joined, one task per input
with retries, the results gathered, the failures kept as one line each, the progress bar, and
``OUT/results.parquet`` and ``OUT/report.html`` written."""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any, Optional, Sequence

import pyarrow.parquet as pq

from .inputs import expand, host_table
from .options import _judging, _lab_args, _notes
from .report import _budgets, render_html
from .results import Failure, FleetResult, _gather
from .tasks import analyse


def _init_ray(address: Optional[str], workers: Optional[int]) -> bool:
    """Starts (or joins) Ray unless it already runs in this process; True if we started it."""
    import ray

    if ray.is_initialized():
        return False
    common = dict(log_to_driver=False, logging_level="ERROR", configure_logging=False)
    if address:
        ray.init(address=address, **common)
    else:
        ray.init(
            num_cpus=workers or os.cpu_count() or 1,
            include_dashboard=False,
            # Results are a few hundred KiB per host: a small object store leaves RAM to the lab.
            object_store_memory=256 << 20,
            **common,
        )
    return True


def run(
    inputs: Sequence[str],
    out: Optional[str] = None,
    *,
    address: Optional[str] = None,
    workers: Optional[int] = None,
    retries: int = 2,
    progress: bool = True,
    **options: Any,
) -> FleetResult:
    """The fleet run behind ``zmem-fleet``: every input (evidence file or capture) through the
    lab as one Ray task (joining the Ray this process runs, else starting one), the results
    gathered; with ``out``, ``out/results.parquet`` and ``out/report.html`` written.
    ``options``: options of the lab (:func:`lab_options`: those not about the machine the lab
    runs on) for every host's lab, checked before any task starts; None (or left out) is the
    lab's own default. Those that judge apply to every host; those that measure to captures
    only (an evidence file was measured on its host): given with evidence among the inputs,
    a warning and :attr:`FleetResult.notes` say so.

    >>> r = run(["captures/"], "out", workers=2)  # doctest: +SKIP
    >>> r.results.to_pandas().groupby("config").memory_saved_bytes.median()  # doctest: +SKIP
    """
    import ray

    if workers is not None and workers < 1:
        raise ValueError("--workers must be at least 1")
    if retries < 0:
        raise ValueError("--retries must be >= 0")
    lab_args = _lab_args(options)
    judge_args = _judging(lab_args)
    measuring = [k for k, v in options.items() if v not in (None, False) and k not in judge_args]
    captures = expand(inputs)
    if not captures:
        raise ValueError(f"no captures or evidence files found in {', '.join(inputs)}")
    csv_hosts = host_table(captures)
    started = _init_ray(address, workers)
    t0 = time.monotonic()
    task = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=[OSError])(analyse)
    limit = workers or len(captures)
    pending: dict[Any, str] = {}
    done: list[dict[str, Any]] = []
    failures: list[Failure] = []
    todo = list(captures)
    bar = _bar(len(captures), progress)
    try:
        while todo or pending:
            while todo and len(pending) < limit:
                c = todo.pop(0)
                pending[task.remote(c, lab_args, judge_args)] = c
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                c = pending.pop(ref)
                try:
                    done.append(ray.get(ref))
                except Exception as e:  # noqa: BLE001 - every failure is reported, none fatal
                    failures.append(Failure(c, _one_line(e)))
                bar.update(1)
    finally:
        bar.close()
        if started:
            ray.shutdown()
    seconds = time.monotonic() - t0
    if not done:
        # A fleet run that analysed nothing is an error, not a report of 0 hosts.
        first = failures[0] if failures else None
        raise ValueError(
            f"no input could be analysed ({len(failures)} failed"
            + (f"; first: {first.capture}: {first.error})" if first else ")")
        )
    result = _gather(done, failures, csv_hosts)
    result.seconds = seconds
    result.notes = _notes(result.inputs, measuring)
    for note in result.notes:
        warnings.warn(f"zmem-fleet: {note}", stacklevel=2)
    if out is not None:
        os.makedirs(out, exist_ok=True)
        pq.write_table(result.results, os.path.join(out, "results.parquet"))
        with open(os.path.join(out, "report.html"), "w") as f:
            f.write(render_html(result, budgets=_budgets(result)))
        result.out = out
    return result


def _one_line(e: BaseException) -> str:
    """The original exception's message (Ray wraps it), on one line."""
    cause = getattr(e, "cause", None) or e
    msg = str(cause).strip().splitlines()
    text = msg[-1] if msg else type(cause).__name__
    return f"{type(cause).__name__}: {text}"


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(total: int, progress: bool) -> Any:
    if not progress:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="host", desc="zmem-fleet", file=sys.stderr)
