"""Type stubs of the Rust extension ``zmem._native`` (python/src/lib.rs). Use the wrappers in
``zmem`` (they return pyarrow Tables and dicts); these functions return the CLI's JSON text.
No argument here has a default of its own: None (or False for a flag) is the default of the
job's request in the Rust library, the one ``zmem JOB --help`` states (``defaults(job)``)."""

import os
from typing import Any, Optional, Sequence, Union

__version__: str

class Error(Exception):
    """A zmem operation failed on valid arguments (corrupt input, an engine that refused, pages
    read back wrong); the message is the CLI's one line."""

_Path = Union[str, os.PathLike[str]]

class PageSet:
    """A set of equal-sized pages with optional metadata.

    >>> ps = PageSet.generate("mixed", pages=16, seed=3)
    >>> ps.to_numpy().shape
    (16, 4096)
    >>> PageSet.from_numpy(ps.to_numpy()).tobytes() == ps.tobytes()
    True
    """

    @staticmethod
    def open(path: _Path, page_size: Optional[int] = None) -> PageSet:
        """Reads a page-set file (plain or zstd) or a raw page file of `page_size` pages."""
    @staticmethod
    def from_bytes(data: bytes, page_size: Optional[int] = None, label: str = "bytes") -> PageSet:
        """Parses a whole page file held in memory (any format `open` reads)."""
    @staticmethod
    def from_numpy(array: Any, label: str = "numpy array") -> PageSet:
        """Pages from a 2-D (n, page_size) uint8 array."""
    @staticmethod
    def generate(
        kind: Optional[str] = None,
        pages: Optional[int] = None,
        page_size: Optional[int] = None,
        seed: Optional[int] = None,
    ) -> PageSet:
        """A generated set, as `zmem gen` (`mixed` or `perf`)."""
    @staticmethod
    def builtin(page_size: Optional[int] = None) -> PageSet:
        """The built-in set the CLI runs on without a file."""
    @staticmethod
    def capture(
        pids: Optional[Sequence[int]] = None,
        all: bool = False,
        cgroup: Optional[_Path] = None,
        zram: Optional[_Path] = None,
        max_pages: Optional[int] = None,
    ) -> PageSet:
        """Live memory, as `zmem capture` (processes' anonymous pages, or a zram device's)."""
    def to_numpy(self) -> Any:
        """The pages as a (n, page_size) uint8 numpy.ndarray (a copy)."""
    def tobytes(self) -> bytes: ...
    def save(self, path: _Path, zstd: Optional[int] = None, raw: bool = False) -> None:
        """Writes a page-set file (zstd at level `zstd`, or 3 for a `.zst` name) or bare pages."""
    def with_metadata(self, metadata: dict[str, str]) -> PageSet:
        """A copy with its set metadata replaced (the fleet reads `host` and `label.*`)."""
    @property
    def metadata(self) -> dict[str, str]: ...
    @property
    def page_size(self) -> int: ...
    @property
    def label(self) -> str: ...
    def __len__(self) -> int: ...

def comp_bench(
    pages: PageSet, algos: Optional[list[str]] = None, min_time_ms: Optional[int] = None
) -> str: ...
def zram_run(
    pages: PageSet,
    algo: Optional[str] = None,
    params: Optional[str] = None,
    pool: Optional[str] = None,
    threads: Optional[int] = None,
    recomp: Optional[list[str]] = None,
    recompress: Optional[str] = None,
) -> str: ...
def replay(
    pages: PageSet,
    trace: _Path,
    ram: Union[int, str],
    swap: Optional[str] = None,
    algo: Optional[str] = None,
    pool: Optional[str] = None,
    max_pool_percent: Optional[int] = None,
    accept_threshold_percent: Optional[int] = None,
    shrinker: bool = False,
    reject_incompressible: bool = False,
    no_writeback: bool = False,
    swap_dir: Optional[_Path] = None,
    swap_device: Optional[str] = None,
    swap_in_memory: bool = False,
    readahead: Optional[str] = None,
    page_cluster: Optional[int] = None,
    cgroup: Optional[str] = None,
    zswap_max: Optional[Union[int, str]] = None,
    watermarks: Optional[str] = None,
    swappiness: Optional[int] = None,
    total_ram: Optional[Union[int, str]] = None,
    stats_flush: Optional[str] = None,
) -> str: ...
def study_allocators(
    pages: PageSet,
    trace: Optional[_Path] = None,
    algo: Optional[str] = None,
    rounds: Optional[int] = None,
    as_is: bool = False,
    ram: Optional[Union[int, str]] = None,
    max_pool_percent: Optional[int] = None,
) -> str: ...
def lab(
    pages: Optional[PageSet] = None,
    *,
    evidence: Optional[_Path] = None,
    output: Optional[str] = None,
    apply_script: Optional[str] = None,
    undo_script: Optional[str] = None,
    **options: Any,
) -> str:
    """`zmem lab --json`; `options`: the lab's options by name (`lab_options()`). `evidence`:
    an evidence file to judge (only the options that judge; not with `pages`)."""
def evidence(
    output: _Path,
    pages: Optional[PageSet] = None,
    *,
    pids: bool = False,
    names: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """`zmem evidence -o OUTPUT`; `options`: the lab's options that measure. Returns `path`,
    `pages`, `codecs`, `pids`, `names`."""
def is_evidence(path: _Path) -> bool:
    """Whether the file is an evidence file, by its first bytes (`zmem lab FILE`'s rule)."""
def read_ceiling() -> int:
    """The most bytes zmem reads of one file (`ZMEM_READ_CEILING`)."""
def lab_options() -> list[dict[str, Any]]:
    """The lab's options from their one declaration: name, flag, kind, value_name, default,
    help, choices, conflicts_with, live, judges."""
def check_lab(**options: Any) -> None:
    """Refuses the lab's options as `lab` would (TypeError, ValueError), without running it."""
def status(interval: Optional[float] = None, mount_debugfs: bool = False) -> tuple[str, list[str]]:
    """`zmem status --json`, and the notes the CLI prints on stderr."""
def dict_train(
    pages: Optional[PageSet],
    algo: str,
    output: _Path,
    size: Union[int, str, None] = None,
    samples: Optional[int] = None,
    level: Optional[int] = None,
    holdout: bool = False,
    live: bool = False,
) -> str: ...
def validate_replay(
    pages: PageSet,
    trace: _Path,
    ram: Union[int, str, None] = None,
    algo: Optional[str] = None,
    timeout: Optional[int] = None,
    kernel_runs: Optional[int] = None,
    stale_stats: bool = False,
    player: Optional[_Path] = None,
    stale_stats_from_reclaim: bool = False,
) -> str: ...
def validate_lab(
    pages: PageSet,
    trace: Optional[_Path] = None,
    ram: Union[int, str, None] = None,
    kernel_runs: Optional[int] = None,
    primary: Optional[str] = None,
    timeout: Optional[int] = None,
    zswap: Optional[list[str]] = None,
    swap_dir: Optional[_Path] = None,
    mount_debugfs: bool = False,
    player: Optional[_Path] = None,
) -> tuple[str, list[str]]:
    """`zmem validate lab --json`, and the notes the CLI prints on stderr."""
def algorithms() -> list[str]: ...
def defaults(job: str) -> dict[str, str]:
    """The defaults of `zmem JOB` as its `--help` states them (the job's request's own)."""
