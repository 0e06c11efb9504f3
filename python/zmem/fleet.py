"""``zmem-fleet``: the lab over many hosts, on Ray, from each host's evidence (or capture).

Evidence is the input to use: on each host, ``zmem evidence -o HOST.evidence`` (as root; in
Python ``zmem.evidence``) measures that host's memory there, with its own observation window,
and writes only what the lab's judgement needs: each page's same/zero flags and compressed
length per compressor, the measured figures, the kernel's abilities and what the window saw.
No page bytes, no dictionary; process ids renumbered and names neutral unless asked for. The
fleet judges each evidence file in a Ray task (``zmem.lab(evidence=FILE)``, as ``zmem lab
HOST.evidence``) with the fleet's budgets; nothing is measured again.

Raw captures (``zmem capture``: a page set per host) stay possible, alone or mixed with
evidence files: each is run through the whole lab in its task, as ``zmem lab FILE --observe 0``
would (nothing of the machine the task runs on enters the result). A capture carries memory
contents: every resident page it read, with the process id, name and virtual address of each
(keys, passwords and documents included), to the fleet's storage and its workers. The results
and the report mark each host's input (``input_kind``: ``evidence`` or ``capture``), so a
reader sees which hosts shipped memory contents.

The driver gathers every host's candidates into ``OUT/results.parquet`` (one row per host x
candidate configuration) and writes ``OUT/report.html``: how much memory each configuration
saves across the fleet, the fleet-wide recommendation, the hosts that want something else, on
how many hosts each configuration fits within the budgets, and each host's input.

Usage::

    sudo zmem evidence -o /shared/evidence/$(hostname).evidence   # on each host
    zmem-fleet /shared/evidence --out fleet-out                  # local Ray, every core
    zmem-fleet s3://bucket/evidence/ --out out --address ray://head:10001
    zmem-fleet /shared/evidence 'captures/*.zpages' --out out --workers 2   # captures mixed in
    python -m zmem.fleet a.evidence,b.zpages --out out

Inputs (any number, mixed): a directory (its files, not recursing; ``*.csv`` and hidden files
skipped), a glob, ``@FILE`` (one input per line), a comma-separated list, or one file; each a
local path or a URI pyarrow.fs opens (``s3://``, ``gs://``, ``hdfs://``, ``file://``). Each
task reads its own input: an evidence file is told by its first bytes
(``{"format":"zmem-evidence"``, ``zmem lab FILE``'s rule, :data:`EVIDENCE_HEAD`); any other
file is a capture. An evidence file larger than zmem's read ceiling (``ZMEM_READ_CEILING``) is
refused unread.

The lab's options (:func:`lab_options`): those that judge (``--cpu-budget``,
``--latency-budget``) apply to every host; those that measure (``--max-pages``, ``--sample``,
``--swap-device``, ``--trace``, ``--generated-trace``, ``--min-time-ms``) apply to captures
only, since an evidence file was measured on its host with ``zmem evidence``'s options. Given
with evidence among the inputs, the fleet says so (a warning, a line on stderr, the report's
notes: :attr:`FleetResult.notes`); it drops none silently.

Hosts and labels: an evidence file's ``host`` map (``host`` and ``label.NAME``, from the
metadata of the page set it measured), a capture's page-set metadata ``host`` (else
``capture.host``) and ``label.NAME`` keys; a ``hosts.csv`` beside the inputs (columns
``capture`` (the file name), ``host``, then one column per label) overrides them; an input with
neither is named by its file name (``web-3.evidence``: ``web-3``).

The operating point (lab report schema 8, ``decision.operating_point``): a host's lab also says
what its decided configuration saves at today's pressure and at the cold age T, beside the
saving with every page swapped. Evidence carries what its host's window saw, so its host has
its own point and figures. The fleet runs each capture with ``observe=0``, away from its
machine, so those hosts' point is ``all_pages`` and the figures at today and at T are None
(:func:`host_point`).

Failures: a task that raises OSError (storage that failed to answer) or whose worker died is
retried (``--retries``, Ray's ``max_retries``/``retry_exceptions``); an input that is corrupt
or stays unreadable is skipped and listed in the report, and the others are kept.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import glob
import html
import io
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

HOSTS_CSV = "hosts.csv"
_GLOB_CHARS = set("*?[")
# The first bytes of every evidence file (``zmem_lab::findings::is_evidence``'s rule): a task
# tells an evidence file from a capture by its first 32 bytes.
EVIDENCE_HEAD = b'{"format":"zmem-evidence"'
HEAD_BYTES = 32
# How much of an evidence file is read for its host and labels (they come first in it).
_HOST_PREFIX = 1 << 16


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


# ---------------------------------------------------------------------------------------------
# Where the captures are


def _is_uri(s: str) -> bool:
    return "://" in s


def _fs(path: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the path in it for a local path or a URI."""
    if _is_uri(path):
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def _listable(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return not base.startswith(".") and not base.lower().endswith(".csv")


def _expand_one(arg: str) -> list[str]:
    if arg.startswith("@"):
        fs, p = _fs(arg[1:])
        with fs.open_input_stream(p) as f:
            lines = f.read().decode().splitlines()
        base = os.path.dirname(arg[1:])
        out = []
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if not _is_uri(line) and not os.path.isabs(line) and not _is_uri(arg[1:]):
                line = os.path.join(base, line)
            out.extend(_expand_one(line))
        return out
    if "," in arg and not os.path.exists(arg):
        return [c for part in arg.split(",") if part for c in _expand_one(part)]
    if _is_uri(arg):
        fs, p = pafs.FileSystem.from_uri(arg)
        scheme = arg.split("://", 1)[0]

        def uri(path: str) -> str:
            # pyarrow gives paths without the scheme ("bucket/dir/f", or "/dir/f" for file://).
            return f"{scheme}://{path}"

        if _GLOB_CHARS & set(p):
            parent, pattern = p.rsplit("/", 1)
            infos = fs.get_file_info(pafs.FileSelector(parent))
            return sorted(
                uri(i.path)
                for i in infos
                if i.type == pafs.FileType.File and fnmatch.fnmatch(i.base_name, pattern)
            )
        info = fs.get_file_info(p)
        if info.type == pafs.FileType.Directory:
            infos = fs.get_file_info(pafs.FileSelector(p))
            return sorted(
                uri(i.path) for i in infos if i.type == pafs.FileType.File and _listable(i.path)
            )
        return [arg]
    if os.path.isdir(arg):
        return sorted(
            os.path.join(arg, n)
            for n in os.listdir(arg)
            if _listable(n) and os.path.isfile(os.path.join(arg, n))
        )
    if _GLOB_CHARS & set(arg):
        return sorted(p for p in glob.glob(arg) if os.path.isfile(p))
    return [arg]


def expand(inputs: Sequence[str]) -> list[str]:
    """Every input file (evidence or capture) the inputs name, in order, each once."""
    seen: dict[str, None] = {}
    for arg in inputs:
        for c in _expand_one(arg):
            seen.setdefault(c, None)
    return list(seen)


def _base_name(capture: str) -> str:
    return capture.rstrip("/").rsplit("/", 1)[-1]


def _stem(capture: str) -> str:
    name = _base_name(capture)
    for ext in (".zst", ".zpages", ".pages", ".raw", ".bin", ".evidence", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name


def _dir_of(capture: str) -> str:
    return capture.rstrip("/").rsplit("/", 1)[0] if "/" in capture else "."


def host_table(captures: Sequence[str]) -> dict[str, dict[str, str]]:
    """``hosts.csv`` rows beside the inputs: input path -> {"host": ..., labels...}."""
    out: dict[str, dict[str, str]] = {}
    by_dir: dict[str, list[str]] = {}
    for c in captures:
        by_dir.setdefault(_dir_of(c), []).append(c)
    for d, members in by_dir.items():
        path = f"{d}/{HOSTS_CSV}"
        try:
            fs, p = _fs(path)
            with fs.open_input_stream(p) as f:
                text = f.read().decode()
        except (OSError, ValueError):
            continue
        rows = {r.get("capture", ""): r for r in csv.DictReader(io.StringIO(text))}
        for c in members:
            row = rows.get(_base_name(c))
            if row:
                out[c] = {k: v for k, v in row.items() if k != "capture" and v not in (None, "")}
    return out


# ---------------------------------------------------------------------------------------------
# One input: the Ray task's body


def input_kind(path: str) -> str:
    """``"evidence"`` where the file's first 32 bytes start with :data:`EVIDENCE_HEAD` (``zmem
    lab FILE``'s rule), else ``"capture"``; reads those bytes only."""
    fs, p = _fs(path)
    with fs.open_input_file(p) as f:
        head = f.read(HEAD_BYTES)
    return "evidence" if head.startswith(EVIDENCE_HEAD) else "capture"


def analyse(
    capture: str, lab_args: dict[str, Any], judge_args: Optional[dict[str, Any]] = None
) -> dict[str, Any]:
    """Runs the lab on one input: an evidence file judged with ``judge_args`` (the options that
    judge; None: those of ``lab_args``), a capture measured and judged with ``lab_args``. Its
    host, labels, input kind and the report."""
    if input_kind(capture) == "evidence":
        return judge_evidence(capture, _judging(lab_args) if judge_args is None else judge_args)
    import zmem

    fs, p = _fs(capture)
    with fs.open_input_stream(p) as f:
        data = f.read()
    pages = zmem.PageSet.from_bytes(data, label=capture)
    meta = pages.metadata
    with _private_tmpdir():
        report = zmem.lab(pages, observe=0, **lab_args)
    labels = {k[len("label.") :]: v for k, v in meta.items() if k.startswith("label.")}
    host = meta.get("host") or meta.get("capture.host")
    return {
        "capture": capture, "input_kind": "capture", "host": host, "labels": labels,
        "report": report,
    }


def judge_evidence(path: str, judge_args: dict[str, Any]) -> dict[str, Any]:
    """Judges one evidence file as ``zmem lab FILE`` does (``zmem.lab(evidence=...)``, the
    Rust reader bounded by the read ceiling): a local file where it is, one in object storage
    copied first into a private temporary directory, refused unread past the ceiling."""
    import zmem

    fs, p = _fs(path)
    with _private_tmpdir() as tmp:
        if isinstance(fs, pafs.LocalFileSystem):
            local = p
        else:
            local = os.path.join(tmp, "host.evidence")
            _copy_bounded(fs, p, local, path)
        report = zmem.lab(evidence=local, **judge_args)
        with open(local, "rb") as f:
            host_map = evidence_host(f.read(_HOST_PREFIX))
    labels = {k[len("label.") :]: v for k, v in host_map.items() if k.startswith("label.")}
    return {
        "capture": path, "input_kind": "evidence", "host": host_map.get("host"),
        "labels": labels, "report": report,
    }


def _copy_bounded(fs: pafs.FileSystem, p: str, local: str, name: str) -> None:
    """``p`` of ``fs`` copied to the new file ``local`` (0600), refused past zmem's read
    ceiling in the Rust reader's words, before the copy where the storage states the size."""
    from . import _native

    ceiling = _native.read_ceiling()

    def too_large(n: int) -> ValueError:
        return ValueError(
            f"{name}: {n} bytes, more than the read ceiling of {ceiling} "
            "(ZMEM_READ_CEILING=BYTES sets it)"
        )

    size = fs.get_file_info(p).size
    if size is not None and size > ceiling:
        raise too_large(size)
    fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out, fs.open_input_stream(p, compression=None) as src:
        copied = 0
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            copied += len(chunk)
            if copied > ceiling:
                raise too_large(copied)
            out.write(chunk)


def evidence_host(head: bytes) -> dict[str, str]:
    """An evidence file's ``host`` map (``host``, ``label.NAME``) from its first bytes: the
    fields before ``host`` are small and come first (the file's own order), so a bounded prefix
    holds it; none there (no host recorded, or a prefix that ends first): ``{}``."""
    text = head.decode("utf-8", "replace")
    dec = json.JSONDecoder()
    i = text.find("{") + 1
    if i == 0:
        return {}
    try:
        while True:
            while text[i] in " \t\r\n,":
                i += 1
            key, i = dec.raw_decode(text, i)
            while text[i] in " \t\r\n:":
                i += 1
            value, i = dec.raw_decode(text, i)
            if key == "host":
                if not isinstance(value, dict):
                    return {}
                return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}
            if key in ("source", "facts"):
                return {}  # past where the host map would be: none recorded
    except (ValueError, IndexError):
        return {}


class _private_tmpdir:
    """A private temporary directory (``mkdtemp``: 0700) as ``$TMPDIR`` while the lab runs in a
    worker: the dictionaries it trains on the capture's memory (0600 files in 0700 directories
    of their own, zmem-files) stay inside it, and it is removed afterwards. Its name,
    ``zmem-fleet-PID.START-XXXXXXXX``, is the one zmem's sweep reads, so the next zmem run on the
    host removes what a killed worker left."""

    def __enter__(self) -> str:
        with open("/proc/self/stat") as f:
            start = f.read().rsplit(")", 1)[1].split()[22 - 3]
        self.dir = tempfile.mkdtemp(prefix=f"zmem-fleet-{os.getpid()}.{start}-")
        os.chmod(self.dir, 0o700)
        self.old = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = self.dir
        return self.dir

    def __exit__(self, *exc: object) -> None:
        if self.old is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self.old
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The fleet


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


# The lab's options the fleet sets itself: each task holds one of Ray's CPUs (num_cpus=1 in
# `run`), so the lab in it runs on one thread and Ray's placement spreads the work over cores.
FLEET_SETS: dict[str, Any] = {"threads": 1}


def lab_options() -> list[dict[str, Any]]:
    """The lab's options the fleet passes on to every host's lab (``zmem.lab_options()``: those
    not about the machine the lab runs on, less those the fleet sets itself)."""
    import zmem

    return [o for o in zmem.lab_options() if not o["live"] and o["name"] not in FLEET_SETS]


def _lab_args(given: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of each host's ``zmem.lab``: the options given (None: the lab's
    default, left out) and the fleet's own, refused before any task starts in the lab's words
    (an option the fleet does not pass on is a TypeError, as an unknown keyword)."""
    from . import _native

    names = {o["name"] for o in lab_options()}
    for name in given:
        if name not in names:
            raise TypeError(f"run() got an unexpected keyword argument '{name}'")
    args = {k: v for k, v in given.items() if v is not None}
    args.update(FLEET_SETS)
    _native.check_lab(**args)
    return args


def _judging(lab_args: dict[str, Any]) -> dict[str, Any]:
    """The options of ``lab_args`` that judge (``judges`` in ``zmem.lab_options()``): what an
    evidence file's lab takes, as ``zmem lab EVIDENCE`` does."""
    import zmem

    judges = {o["name"] for o in zmem.lab_options() if o["judges"]}
    return {k: v for k, v in lab_args.items() if k in judges}


def _notes(inputs: dict[str, str], measuring: Sequence[str]) -> list[str]:
    """What the run did not apply to every host: the measuring options given, where evidence
    files (measured on their hosts) were among the inputs."""
    evidence = sum(k == "evidence" for k in inputs.values())
    if not (evidence and measuring):
        return []
    named = ", ".join(f"{n} (--{n.replace('_', '-')})" for n in measuring)
    captures = len(inputs) - evidence
    applied = f"the {captures} capture(s) only" if captures else "no host"
    return [
        f"{named}: measure pages, so applied to {applied}, not to the {evidence} evidence "
        "file(s), which zmem evidence measured on their hosts"
    ]


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


# ---------------------------------------------------------------------------------------------
# The operating point (lab report schema 8: zmem_lab::operating)

# A candidate's figures at the points, nested in the report, flat in the rows.
AT_POINT_COLUMNS = {
    "at_today": "memory_saved_at_today_bytes",
    "at_cold_age": "memory_saved_at_cold_age_bytes",
}
# The host's point, on each of its rows.
HOST_POINT_COLUMNS = ("operating_point", "cold_age_secs", "cold_bytes")
# Their types where no host read them (every value None would give Arrow's null type).
_POINT_TYPES = {
    **{c: pa.int64() for c in AT_POINT_COLUMNS.values()},
    "operating_point": pa.string(),
    "cold_age_secs": pa.int64(),
    "cold_bytes": pa.int64(),
}


def _today_read(op: Optional[dict[str, Any]]) -> bool:
    """Whether the host's lab read today's pressure: its reason is not ``no_reading`` (pages
    away from their machine, or no reading at all)."""
    reason = ((op or {}).get("today") or {}).get("reason") or {}
    return reason.get("kind") not in (None, "no_reading")


def saved_at(cand: dict[str, Any], op: Optional[dict[str, Any]], point: str) -> Optional[int]:
    """A candidate's ``memory_saved_bytes`` at ``point`` (``today`` or ``cold_age``) of the
    host's operating point ``op``; None where the host's lab did not read that point: no
    ``op`` (a report before schema 8), today's pressure not read (its zeros are not a saving),
    or no cold curve reaching T."""
    if point == "today":
        at = cand.get("at_today") if _today_read(op) else None
    elif point == "cold_age":
        at = cand.get("at_cold_age") if (op or {}).get("cold") else None
    else:
        raise ValueError(f"{point!r} is not an operating point (today or cold_age)")
    return None if at is None else at.get("memory_saved_bytes")


def candidate_columns(cand: dict[str, Any], op: Optional[dict[str, Any]]) -> dict[str, Any]:
    """A candidate's fields as result columns: as the report has them, less its name, with its
    savings at today's point and at the cold age flat (:data:`AT_POINT_COLUMNS`)."""
    row = {k: v for k, v in cand.items() if k != "name" and k not in AT_POINT_COLUMNS}
    for point, column in zip(("today", "cold_age"), AT_POINT_COLUMNS.values()):
        row[column] = saved_at(cand, op, point)
    return row


def host_point(report: dict[str, Any]) -> dict[str, Any]:
    """A host's operating point and its own decision's savings: ``operating_point`` (the point
    the decision's ``memory_saved_bytes`` is at: ``today``, ``cold_age`` or ``all_pages``),
    ``cold_age_secs`` (T) and ``cold_bytes`` (anonymous bytes idle for T), and the decided
    configuration's ``memory_saved_bytes`` (every page swapped, as before schema 8),
    ``memory_saved_at_today_bytes`` and ``memory_saved_at_cold_age_bytes`` (0 for keep). None
    where the lab did not read it: a report before schema 8 has no point; a capture the fleet
    ran (``observe=0``, away from its machine) is at ``all_pages``, with neither today's
    pressure nor a cold curve."""
    d = report["decision"]
    op = d.get("operating_point")
    cold = (op or {}).get("cold") or {}
    i = d.get("chosen")
    cands = report["candidates"]
    chosen = cands[i] if i is not None and 0 <= i < len(cands) else None
    keep = d.get("kind") == "keep"

    def decided(point: str) -> Optional[int]:
        v = None if chosen is None else saved_at(chosen, op, point)
        # Keeping what runs saves nothing at any point, as the decision says.
        return 0 if keep and v is not None else v

    return {
        "operating_point": (op or {}).get("named"),
        "cold_age_secs": cold.get("age_secs"),
        "cold_bytes": cold.get("cold_bytes"),
        "memory_saved_bytes": d.get("all_pages_saved_bytes", d["memory_saved_bytes"]),
        "memory_saved_at_today_bytes": decided("today"),
        "memory_saved_at_cold_age_bytes": decided("cold_age"),
    }


def _typed(table: pa.Table) -> pa.Table:
    """The point columns with their types where every value is None (Arrow's null type)."""
    for name, t in _POINT_TYPES.items():
        i = table.schema.get_field_index(name)
        if i >= 0 and pa.types.is_null(table.schema.field(i).type):
            table = table.set_column(i, name, table.column(i).cast(t))
    return table


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


def _empty_table() -> pa.Table:
    return pa.table({"host": pa.array([], pa.string()), "config": pa.array([], pa.string())})


# ---------------------------------------------------------------------------------------------
# The fleet's decision

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


# ---------------------------------------------------------------------------------------------
# The report


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


# ---------------------------------------------------------------------------------------------
# The command line


DESCRIPTION = """\
Run the zmem lab over many hosts on Ray; write OUT/results.parquet and OUT/report.html.

Give each host's evidence: run `zmem evidence -o HOST.evidence` on each host (as root) and
point zmem-fleet at the files. Evidence holds what the lab's judgement needs (page flags,
compressed lengths, measured figures) and no memory contents; the fleet judges it with the
budgets below. Raw captures (`zmem capture`) stay possible, mixed with evidence, but carry
memory contents: every resident page, with process ids, names and addresses. The results and
the report mark each host's input (input_kind: evidence or capture)."""

EPILOG = """\
example:
  sudo zmem evidence -o /shared/evidence/$(hostname).evidence    # on each host
  zmem-fleet /shared/evidence --out fleet-out"""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="zmem-fleet",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "captures",
        nargs="+",
        metavar="DIR|GLOB|LIST",
        help="evidence files (zmem evidence; told by their first bytes) and captures: a "
        "directory, a glob, @FILE (one per line), a comma-separated list or a file; local paths "
        "or URIs (s3://, gs://, hdfs://, file://)",
    )
    ap.add_argument(
        "-o", "--output", "--out", dest="out", required=True, metavar="OUT",
        help="output directory (--out is the older spelling)",
    )
    ap.add_argument("--address", help="an existing Ray cluster (default: start Ray locally)")
    ap.add_argument(
        "--workers", type=int, help="inputs analysed at once (default: every CPU Ray has)"
    )
    ap.add_argument("--retries", type=int, default=2, help="retries of a failed task (2)")
    judging = ap.add_argument_group(
        "lab options that judge", "applied to every host: evidence files and captures"
    )
    measuring = ap.add_argument_group(
        "lab options that measure",
        "applied to captures only: an evidence file was measured on its host by zmem\n"
        "evidence (with its own options); given with evidence among the inputs, the run\n"
        "says which did not apply",
    )
    for o in lab_options():
        _add_lab_option(judging if o["judges"] else measuring, o)
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap


def _count_or_word(text: str) -> Union[int, str]:
    """A value that is a number or a word (``--max-pages 512``, ``--max-pages all``): the lab
    refuses a bad one in its own words."""
    try:
        return int(text)
    except ValueError:
        return text


# argparse's type per kind of lab option (a flag is store_true).
_TYPES: dict[str, Any] = {
    "count": int, "number": float, "count_or_word": _count_or_word, "text": str, "path": str,
}


def _add_lab_option(ap: Any, o: dict[str, Any]) -> None:
    """One of the lab's options as a flag of zmem-fleet, from its declaration: its help, its
    default as the lab states it. Its default here is None, the lab's own (never a copy)."""
    default = "" if o["default"] is None else f" (default: the lab's, {o['default']})"
    choices = f" (one of {', '.join(o['choices'])})" if o["choices"] else ""
    # argparse formats help with %: the lab's "95 %" must reach it as "%%".
    text = o["help"].replace("%", "%%") + choices + default
    if o["kind"] == "flag":
        ap.add_argument(o["flag"], action="store_true", default=None, help=text)
        return
    meta = o["value_name"]
    ap.add_argument(o["flag"], type=_TYPES[o["kind"]], default=None, metavar=meta, help=text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            # The run's notes are printed below, once, as the command's own lines.
            warnings.simplefilter("ignore")
            r = run(
                args.captures,
                args.out,
                address=args.address,
                workers=args.workers,
                retries=args.retries,
                progress=not args.no_progress,
                **{o["name"]: getattr(args, o["name"]) for o in lab_options()},
            )
    except (ValueError, OSError) as e:
        print(f"zmem-fleet: {e}", file=sys.stderr)
        return 2
    evidence = sum(k == "evidence" for k in r.inputs.values())
    print(
        f"zmem-fleet: {len(r.hosts)} hosts, {len(r.failures)} skipped, "
        f"fleet-wide choice {r.recommendation or 'none'}, {r.seconds:.1f} s; wrote "
        f"{os.path.join(r.out or '', 'results.parquet')} and "
        f"{os.path.join(r.out or '', 'report.html')}",
        file=sys.stderr,
    )
    print(
        f"zmem-fleet: inputs: {evidence} evidence, {len(r.inputs) - evidence} capture(s) "
        "(memory contents)",
        file=sys.stderr,
    )
    for note in r.notes:
        print(f"zmem-fleet: {note}", file=sys.stderr)
    for f in r.failures:
        print(f"zmem-fleet: skipped {f.capture}: {f.error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
