"""zmem: Linux compressed memory (zram, zswap, the zpool allocators, the page compressors)
rebuilt in user space, and a lab that replays real memory through every configuration.

This package binds the same engines the ``zmem`` command line runs: each function takes a
:class:`PageSet` and the CLI's options, runs the CLI's code (in Rust, with the GIL released)
and returns what ``zmem ... --json`` prints: tables as :class:`pyarrow.Table` (one column per
JSON field, named as in the JSON; ``.to_pandas()`` works), the lab's report as a ``dict``.

>>> import zmem
>>> pages = zmem.PageSet.generate("mixed", pages=256, seed=1)
>>> len(pages), pages.page_size
(256, 4096)
>>> t = zmem.comp_bench(pages, algo=["lz4", "zstd"], min_time_ms=1)
>>> t.column("algo").to_pylist()
['memcpy', 'lz4', 'zstd']

Errors raise :class:`ValueError` (a bad argument), :class:`OSError` (a file the system
refused) or :class:`zmem.Error` (corrupt input, an engine that failed), with the CLI's message.
"""

from __future__ import annotations

import functools
import json
import os
import re
import textwrap
import warnings
from typing import Any, Callable, Optional, Sequence, TypeVar, Union

import pyarrow as pa

from . import _native
from ._native import Error, PageSet

__all__ = [
    "Error",
    "PageSet",
    "algorithms",
    "comp_bench",
    "defaults",
    "dict_train",
    "evidence",
    "lab",
    "lab_options",
    "replay",
    "status",
    "study_allocators",
    "validate_lab",
    "validate_replay",
    "zram_run",
    "__version__",
]

__version__: str = _native.__version__

Pages = Union[PageSet, str, "os.PathLike[str]", Any]
PathLike = Union[str, "os.PathLike[str]"]


def _names(v: Union[str, Sequence[str], None]) -> Optional[list[str]]:
    """A list of names from a list, or from one name given as a string (not its letters)."""
    if v is None:
        return None
    if isinstance(v, str):
        return [v]
    return [str(x) for x in v]


def _path(p: Optional[PathLike]) -> Optional[str]:
    """A path argument as the extension takes it."""
    return None if p is None else os.fspath(p)


F = TypeVar("F", bound=Callable[..., Any])


def _errors(f: F) -> F:
    """One error mapping for every function: a number out of range (Python's OverflowError from
    the extension's argument conversion) is a bad argument, a ValueError, like every other."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except OverflowError as e:
            raise ValueError(f"{f.__name__}: a number out of range ({e})") from None

    return wrapper  # type: ignore[return-value]


def _pages(pages: Pages, page_size: Optional[int] = None) -> PageSet:
    """A PageSet from a PageSet, a path, or a (n, page_size) uint8 array; ``page_size`` is the
    page size of a raw page file (a PageSet or page-set file knows its own)."""
    if isinstance(pages, PageSet):
        if page_size is not None and page_size != pages.page_size:
            raise ValueError(
                f"page_size={page_size}, but the PageSet's pages are {pages.page_size} bytes"
            )
        return pages
    if isinstance(pages, (str, os.PathLike)):
        return PageSet.open(os.fspath(pages), page_size)
    if hasattr(pages, "__array__") or hasattr(pages, "shape"):
        return PageSet.from_numpy(pages)
    raise TypeError(
        f"pages must be a zmem.PageSet, a path or a (n, page_size) uint8 array, "
        f"not {type(pages).__name__}"
    )


def _table(text: str) -> pa.Table:
    rows = json.loads(text)
    if isinstance(rows, dict):
        rows = [rows]
    return pa.Table.from_pylist(rows)


def algorithms() -> list[str]:
    """The algorithm names ``comp_bench`` takes (``zmem comp-bench --list``).

    >>> "lz4" in zmem.algorithms()
    True
    """
    return _native.algorithms()


def defaults(job: str) -> dict[str, str]:
    """The defaults of ``zmem JOB`` (``"lab"``, ``"zram"``, ``"replay"``, ``"study
    allocators"``, ``"comp-bench"``, ``"capture"``, ``"gen"``, ``"dict train"``, ``"status"``,
    ``"validate replay"``, ``"validate lab"``) as its ``--help`` states them: what each
    keyword argument of the job's function left at None takes (one place for defaults, the
    job's request in the Rust library; this package holds none of its own).

    >>> zmem.defaults("zram")["pool"]
    'zsmalloc'
    """
    return dict(_native.defaults(job))


@_errors
def comp_bench(
    pages: Pages,
    algo: Union[str, Sequence[str], None] = None,
    *,
    min_time_ms: Optional[int] = None,
    page_size: Optional[int] = None,
    algos: Union[str, Sequence[str], None] = None,
) -> pa.Table:
    """The compressor table, as ``zmem comp-bench --json``: one row per algorithm (ratio,
    compression and decompression speeds, memory-freeing speed, verified).

    ``algo``: one algorithm or a list, each ``name``, ``name:level`` or
    ``name:level=L,dict=FILE`` (default: all; ``algos`` is the older spelling). ``min_time_ms``:
    minimum time per timed pass (the best pass counts). ``page_size``: of a raw page file.
    ``zmem comp-bench --list`` is :func:`algorithms`. None: the default ``zmem comp-bench
    --help`` states (``zmem.defaults("comp-bench")``).

    >>> t = zmem.comp_bench(zmem.PageSet.generate(pages=64), algo=["lzo", "zstd:3"], min_time_ms=1)
    >>> t.column_names[:2]
    ['algo', 'pages']
    """
    if algo is not None and algos is not None:
        raise ValueError("give algo or algos (its older spelling), not both")
    names = _names(algo if algo is not None else algos)
    return _table(_native.comp_bench(_pages(pages, page_size), names, min_time_ms))


@_errors
def zram_run(
    pages: Pages,
    *,
    algo: Optional[str] = None,
    params: Optional[str] = None,
    pool: Optional[str] = None,
    threads: Optional[int] = None,
    recomp: Union[str, Sequence[str], None] = None,
    recompress: Optional[str] = None,
    page_size: Optional[int] = None,
) -> pa.Table:
    """The pages through one zram device, as ``zmem zram --json``: one row (stat files,
    speeds, verified). Every keyword argument left at None takes the default
    ``zmem zram --help`` states (``zmem.defaults("zram")``).

    >>> t = zmem.zram_run(zmem.PageSet.generate(pages=64), algo="lz4", pool="zbud")
    >>> t.num_rows
    1
    """
    return _table(
        _native.zram_run(
            _pages(pages, page_size), algo, params, pool, threads, _names(recomp), recompress,
        )
    )


@_errors
def replay(
    pages: Pages,
    trace: Union[str, "os.PathLike[str]"],
    ram: Union[int, str],
    *,
    swap: Optional[str] = None,
    algo: Optional[str] = None,
    pool: Optional[str] = None,
    max_pool_percent: Optional[int] = None,
    accept_threshold_percent: Optional[int] = None,
    shrinker: bool = False,
    reject_incompressible: bool = False,
    no_writeback: bool = False,
    swap_dir: Optional[PathLike] = None,
    swap_device: Optional[str] = None,
    swap_in_memory: bool = False,
    readahead: Optional[str] = None,
    page_cluster: Optional[int] = None,
    cgroup: Optional[str] = None,
    zswap_max: Optional[Union[int, str]] = None,
    watermarks: Optional[str] = None,
    page_size: Optional[int] = None,
    swappiness: Optional[int] = None,
    total_ram: Optional[Union[int, str]] = None,
    stats_flush: Optional[str] = None,
) -> pa.Table:
    """An access trace (``zmem trace gen``) over the pages with ``ram`` bytes of RAM (an int,
    or ``"256M"``), zram or zswap as swap, as ``zmem replay --json``: one row. ``swap_device``:
    the device behind the swap file whose latency each device read and write is charged
    (``nvme``, ``ssd``, ``emmc``, ``hdd``, or a path to measure), as ``--swap-device``.
    ``readahead`` (``vma``, ``cluster`` or ``none``) and ``page_cluster`` (``vm.page-cluster``):
    the swap readahead of zswap's swap-ins, by default this machine's, as ``--readahead`` and
    ``--page-cluster``. ``cgroup`` (``v1`` or ``v2``: on v2 zswap's compressed pool is charged
    to the memcg; on v1 nothing is, and zswap's ``shrinker`` writes nothing back) and ``zswap_max`` (``memory.zswap.max``, v2 only: bytes, a size string or
    ``"max"``), as ``--cgroup`` and ``--zswap-max``. ``watermarks``: machine-wide reclaim
    (kswapd between the marks) instead of a memcg's limit, ``"MIN,LOW,HIGH"`` in bytes of
    ``ram`` or ``"machine"``, as ``--watermarks``. ``swappiness`` (0 to 200): the memcg's,
    by default this machine's ``vm.swappiness``, as ``--swappiness``. ``total_ram``: the
    machine's RAM zswap's ``max_pool_percent`` is a share of (bytes or a size string), by
    default this machine's ``MemTotal``, as ``--total-ram``. ``stats_flush``: when the memcg's
    statistics catch up with its lists (``kernel``, ``new-memcg`` or ``always``), as
    ``--stats-flush``. Every keyword argument left at None takes the default
    ``zmem replay --help`` states (``zmem.defaults("replay")``).

    >>> zmem.replay(pages, "trace.zt", "1M", swap="zram").column("swap_ins")  # doctest: +SKIP
    """
    return _table(
        _native.replay(
            _pages(pages, page_size),
            os.fspath(trace),
            ram,
            swap,
            algo,
            pool,
            max_pool_percent,
            accept_threshold_percent,
            shrinker,
            reject_incompressible,
            no_writeback,
            _path(swap_dir),
            swap_device,
            swap_in_memory,
            readahead,
            page_cluster,
            cgroup,
            zswap_max,
            watermarks,
            swappiness,
            total_ram,
            stats_flush,
        )
    )


@_errors
def study_allocators(
    pages: Pages,
    trace: Optional[Union[str, "os.PathLike[str]"]] = None,
    *,
    algo: Optional[str] = None,
    rounds: Optional[int] = None,
    as_is: bool = False,
    ram: Optional[Union[int, str]] = None,
    max_pool_percent: Optional[int] = None,
    page_size: Optional[int] = None,
) -> pa.Table:
    """The zpool RFC's allocator study, as ``zmem study allocators --json``: zsmalloc, zbud and z3fold under
    zswap, one row each. Every keyword argument left at None takes the default
    ``zmem study allocators --help`` states (``zmem.defaults("study allocators")``).

    >>> zmem.study_allocators(zmem.PageSet.generate(pages=64), rounds=1).column("allocator")  # doctest: +SKIP
    """
    t = None if trace is None else os.fspath(trace)
    return _table(
        _native.study_allocators(
            _pages(pages, page_size), t, algo, rounds, as_is, ram, max_pool_percent
        )
    )


@_errors
def lab(
    pages: Optional[Pages] = None,
    *,
    evidence: Optional[PathLike] = None,
    output: Optional[PathLike] = None,
    apply_script: Optional[PathLike] = None,
    undo_script: Optional[PathLike] = None,
    **options: Any,
) -> dict[str, Any]:
    """The lab, as ``zmem lab --json``: the report (``docs/lab-report.schema.json``) as a dict.

    ``pages``: a PageSet, path or array; None: the ``source`` option. A path to an evidence
    file is judged as ``evidence`` is (as ``zmem lab FILE`` tells one by its first bytes).
    ``evidence``: an evidence file (:func:`evidence`, ``zmem evidence -o FILE``) to judge as it
    is, nothing measured again: only the options that judge apply (``judges`` in
    :func:`lab_options`: ``cpu_budget``, ``latency_budget``, ``promotion_budget``,
    ``no_proactive``, ``exclude``), and one that measures raises ValueError naming it; giving
    ``pages`` too raises ValueError. ``output``: also write report.html and report.json into
    this directory. ``apply_script``: write the script that applies the decision there (nothing
    is run; a dictionary it needs goes beside it as ``zmem-zram.dict``, mode 0600, and a value
    from the page set that cannot go into a script raises ValueError naming its field);
    ``undo_script``: the script that undoes it.

    Every other option of ``zmem lab`` is a keyword argument of the same name (dashes as
    underscores), declared once in the Rust library with its default and parsed by the same
    code as the flag, so a bad value is refused in the CLI's words (``observe=-1: negative;
    ...``); None (the default of each, False for a flag) is the library's default, the one
    ``zmem lab --help`` states. A source named never falls back: ``source="zram"`` without an
    active zram swap raises ValueError with the reason; a fallback of the automatic choice is
    ``report["source"]["fallback_reason"]``. With ``sample`` (or by default) the report's
    ``estimates`` hold 95 % confidence intervals. The options (:func:`lab_options`):

    >>> r = zmem.lab(zmem.PageSet.generate(pages=2048), observe=0, min_time_ms=1)  # doctest: +SKIP
    >>> r["decision"]["config"]  # doctest: +SKIP
    'zram zstd'
    >>> zmem.lab(evidence="host.evidence", cpu_budget=2)["decision"]["config"]  # doctest: +SKIP
    'zram zstd'
    """
    if (
        evidence is None
        and isinstance(pages, (str, os.PathLike))
        and _native.is_evidence(os.fspath(pages))
    ):
        pages, evidence = None, pages
    p = None if pages is None else _pages(pages)
    return json.loads(
        _native.lab(
            p, evidence=_path(evidence), output=_path(output), apply_script=_path(apply_script),
            undo_script=_path(undo_script), **options,
        )
    )


@_errors
def evidence(
    output: PathLike,
    pages: Optional[Pages] = None,
    *,
    pids: bool = False,
    names: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """What the lab's judgement needs of the pages, without the pages, written to ``output``,
    as ``zmem evidence -o OUTPUT [PAGES]``: each page's same/zero flags and compressed length
    per compressor, the measured rows, the kernel's abilities and what the observation window
    saw (JSON, mode 0600, never through a link; no page bytes, no dictionary). Judge it here or
    on any other machine with ``zmem.lab(evidence=output)``, ``zmem lab OUTPUT`` or
    ``zmem-fleet``: the same judge on the same findings gives the same decision.

    ``pages``: a PageSet, path or array; None: the ``source`` option (this machine's memory).
    ``pids``: keep the processes' ids (else each is numbered in order of appearance);
    ``names``: keep process names, cgroup paths and the source's own words (else neutral ones).
    Every other keyword argument is one of :func:`lab`'s options that measure (``judges``
    False in :func:`lab_options`; ``observe``, ``min_time_ms``, ``max_pages``, ...), parsed as
    :func:`lab` parses it; one that judges (``cpu_budget``, ...) raises ValueError naming it:
    the judge applies it. Returns what was written: ``path``, ``pages`` (pages described),
    ``codecs`` (the compressors whose lengths it holds), ``pids`` and ``names``. The options
    that measure:

    >>> zmem.evidence("host.evidence", zmem.PageSet.generate(pages=256), observe=0)["pages"]  # doctest: +SKIP
    256
    """
    p = None if pages is None else _pages(pages)
    return dict(_native.evidence(os.fspath(output), p, pids=pids, names=names, **options))


def lab_options() -> list[dict[str, Any]]:
    """The options of ``zmem lab`` / :func:`lab`, from their one declaration in the Rust library:
    per option its ``name`` (the keyword), ``flag``, ``kind``, ``default`` (as ``--help`` states
    it; None: none stated), ``help``, ``choices``, ``conflicts_with``, ``live`` (about the
    machine the lab runs on; zmem-fleet has the others) and ``judges`` (the option judges the
    findings: what ``lab(evidence=...)`` takes; the others measure: what :func:`evidence`
    takes).

    >>> [o["name"] for o in zmem.lab_options()][:2]
    ['source', 'no_capture']
    """
    return [dict(o) for o in _native.lab_options()]


def _document_options(f: Callable[..., Any], judging: Optional[bool] = None) -> None:
    """``f``'s signature and docs from the lab's declaration: each option (those that judge, or
    those that measure, where ``judging`` says which) a keyword-only argument defaulting to
    None (False for a flag), described by its help and default."""
    import inspect

    sig = inspect.signature(f)
    params = [p for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD]
    lines = []
    for o in _native.lab_options():
        if judging is not None and o["judges"] != judging:
            continue
        none = False if o["kind"] == "flag" else None
        params.append(inspect.Parameter(o["name"], inspect.Parameter.KEYWORD_ONLY, default=none))
        default = "" if o["default"] is None else f" (default: {o['default']})"
        choices = f" (one of {', '.join(o['choices'])})" if o["choices"] else ""
        lines.append(f"``{o['name']}``: {o['help']}{choices}{default}.")
    setattr(f, "__signature__", sig.replace(parameters=params))
    # Before the examples, indented as they are (Python 3.13 dedents docstrings, older do not).
    doc = f.__doc__ or ""
    m = re.search(r"\n\n( *)>>>", doc)
    at, indent = (m.start(), m.group(1)) if m else (len(doc), "    ")
    wrap = functools.partial(textwrap.fill, width=96, initial_indent=indent, subsequent_indent=indent)
    f.__doc__ = doc[:at] + "".join("\n\n" + wrap(line) for line in lines) + doc[at:]


_document_options(lab)
_document_options(evidence, judging=False)


def _noted(result: tuple[str, list[str]], job: str) -> dict[str, Any]:
    """The JSON of a job that also has notes (what the CLI prints on stderr: what mounting
    debugfs did), the notes as warnings."""
    text, notes = result
    for n in notes:
        warnings.warn(f"zmem {job}: {n}", stacklevel=3)
    return json.loads(text)


@_errors
def status(*, interval: Optional[float] = None, mount_debugfs: bool = False) -> dict[str, Any]:
    """Every zram device, zswap, the swap areas and the swap/zswap rates over ``interval``
    seconds (0: no rates), as ``zmem status --json``: a dict, sizes in exact bytes. Reads what
    the kernel lets this user read and lists what it could not (``unreadable``), with the
    reason. ``mount_debugfs``: as root, mount debugfs for this read where it is not mounted and
    unmount it after (what that did is a warning). None: ``zmem.defaults("status")``.

    >>> zmem.status(interval=0)["page_size"]  # doctest: +SKIP
    4096
    """
    return _noted(_native.status(interval, mount_debugfs), "status")


@_errors
def dict_train(
    pages: Optional[Pages],
    algo: str,
    output: PathLike,
    *,
    size: Union[int, str, None] = None,
    samples: Optional[int] = None,
    level: Optional[int] = None,
    holdout: bool = False,
    page_size: Optional[int] = None,
    live: bool = False,
) -> dict[str, Any]:
    """A dictionary for zram's ``algorithm_params dict=`` trained on the pages for ``algo``
    (``zstd`` or ``lz4``), written to ``output`` and measured on a zram device, as ``zmem dict
    train --json``: a dict (``dict``, ``algorithm_params``, ``trained_on_pages``,
    ``measured_on``, ``effect``). ``size``: the largest dictionary (bytes, or ``"64K"``);
    ``samples``: pages sampled for training; ``level``: of the measuring devices; ``holdout``:
    train on the first half, measure on the second. ``page_size``: of a raw page file.
    ``live``: with ``pages=None``, train on this machine's processes' memory (as root; what an
    apply script runs for a decision made from evidence). None: ``zmem.defaults("dict train")``.

    >>> zmem.dict_train(zmem.PageSet.generate(pages=256), "zstd", "zram.dict")["measured_on"]  # doctest: +SKIP
    'training pages'
    """
    return json.loads(
        _native.dict_train(
            None if pages is None else _pages(pages, page_size),
            algo,
            os.fspath(output),
            size,
            samples,
            level,
            holdout,
            live,
        )
    )


@_errors
def validate_replay(
    pages: Pages,
    trace: PathLike,
    *,
    ram: Union[int, str, None] = None,
    algo: Optional[str] = None,
    timeout: Optional[int] = None,
    kernel_runs: Optional[int] = None,
    stale_stats: bool = False,
    player: Optional[PathLike] = None,
    stale_stats_from_reclaim: bool = False,
) -> dict[str, Any]:
    """``trace`` over the pages on the live kernel (a memory cgroup of ``ram`` bytes, a fresh
    kernel zram swap) beside ``zmem replay``'s, as ``zmem validate replay --json``: a dict
    (``kernel``, ``zmem``, ``error``, ...). Needs root, kernel zram and a memory cgroup.
    ``player``: the ``zmem`` binary whose ``validate play`` mode plays the trace in the cgroup
    (None: ``$ZMEM_BIN``, else ``zmem`` on PATH). Ctrl-C ends a kernel run cleanly (what it
    made is removed) and raises KeyboardInterrupt. Every other keyword argument left at None
    takes the default ``zmem validate replay --help`` states (``zmem.defaults("validate
    replay")``).

    >>> zmem.validate_replay(pages, "trace.zt")["error"]  # doctest: +SKIP
    """
    return json.loads(
        _native.validate_replay(
            _pages(pages), os.fspath(trace), ram, algo, timeout, kernel_runs, stale_stats,
            _path(player), stale_stats_from_reclaim,
        )
    )


@_errors
def validate_lab(
    pages: Pages,
    trace: Optional[PathLike] = None,
    *,
    ram: Union[int, str, None] = None,
    kernel_runs: Optional[int] = None,
    primary: Optional[str] = None,
    timeout: Optional[int] = None,
    zswap: Union[str, Sequence[str], None] = None,
    swap_dir: Optional[PathLike] = None,
    mount_debugfs: bool = False,
    player: Optional[PathLike] = None,
) -> dict[str, Any]:
    """The lab's prediction for every candidate the running kernel can run, checked on the
    live kernel with the same pages and ``trace`` (None: the lab's own generated trace), as
    ``zmem validate lab --json``: a dict (``configurations``, ``same_order``, ...). Needs
    root, kernel zram and a memory cgroup. ``zswap``: zswap configurations to check too
    (``"lzo,max_pool_percent=20"``; one or a list), refused while a swap area this call did
    not make is active. ``player``: as :func:`validate_replay`'s. Every other keyword argument
    left at None takes the default ``zmem validate lab --help`` states
    (``zmem.defaults("validate lab")``).

    >>> zmem.validate_lab(pages, kernel_runs=1)["same_order"]  # doctest: +SKIP
    """
    t = None if trace is None else os.fspath(trace)
    return _noted(
        _native.validate_lab(
            _pages(pages), t, ram, kernel_runs, primary, timeout, _names(zswap), _path(swap_dir),
            mount_debugfs, _path(player),
        ),
        "validate lab",
    )


def candidates_table(report: dict[str, Any]) -> pa.Table:
    """The report's ``candidates`` (one per configuration) as a table.

    >>> zmem.candidates_table(r).column("name")  # doctest: +SKIP
    """
    return pa.Table.from_pylist(report["candidates"])


__all__.append("candidates_table")
