"""Type stubs of the Rust extension ``zmem._native`` (python/src/lib.rs). Use the wrappers in
``zmem`` (they return pyarrow Tables and dicts); these functions return the CLI's JSON text."""

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
    def open(path: _Path, page_size: int = 4096) -> PageSet:
        """Reads a page-set file (plain or zstd) or a raw page file of `page_size` pages."""
    @staticmethod
    def from_bytes(data: bytes, page_size: int = 4096, label: str = "bytes") -> PageSet:
        """Parses a whole page file held in memory (any format `open` reads)."""
    @staticmethod
    def from_numpy(array: Any, label: str = "numpy array") -> PageSet:
        """Pages from a 2-D (n, page_size) uint8 array."""
    @staticmethod
    def generate(
        kind: str = "mixed", pages: int = 4096, page_size: int = 4096, seed: int = 0
    ) -> PageSet:
        """A generated set, as `zmem gen` (`mixed` or `perf`)."""
    @staticmethod
    def builtin(page_size: int = 4096) -> PageSet:
        """The built-in set the CLI runs on without a file."""
    @staticmethod
    def capture(
        pids: Sequence[int] = (),
        all: bool = False,
        cgroup: Optional[_Path] = None,
        zram: Optional[_Path] = None,
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

def comp_bench(pages: PageSet, algos: Optional[list[str]] = None, min_time_ms: int = 200) -> str: ...
def zram_run(
    pages: PageSet,
    algo: Optional[str] = None,
    params: Optional[str] = None,
    pool: str = "zsmalloc",
    threads: int = 1,
    recomp: list[str] = ...,
    recompress: Optional[str] = None,
) -> str: ...
def replay(
    pages: PageSet,
    trace: _Path,
    ram: Union[int, str],
    swap: str = "zswap",
    algo: str = "lzo-rle",
    pool: str = "zsmalloc",
    max_pool_percent: int = 20,
    accept_threshold_percent: int = 90,
    shrinker: bool = False,
    reject_incompressible: bool = False,
    no_writeback: bool = False,
    swap_dir: Optional[_Path] = None,
    swap_device: str = "nvme",
    swap_in_memory: bool = False,
    readahead: Optional[str] = None,
    page_cluster: Optional[int] = None,
) -> str: ...
def study_allocators(
    pages: PageSet,
    trace: Optional[_Path] = None,
    algo: str = "lzo-rle",
    rounds: int = 3,
    as_is: bool = False,
    ram: Optional[Union[int, str]] = None,
    max_pool_percent: int = 20,
) -> str: ...
def lab(
    pages: Optional[PageSet] = None,
    source: Optional[str] = None,
    no_capture: bool = False,
    observe: Optional[int] = None,
    max_pages: Union[int, str, None] = None,
    sample: Optional[int] = None,
    cpu_budget: Optional[float] = None,
    latency_budget: Optional[float] = None,
    swap_device: Optional[str] = None,
    apply_script: Optional[str] = None,
    trace: Optional[str] = None,
    threads: Optional[int] = None,
    min_time_ms: Optional[int] = None,
    output: Optional[str] = None,
    mount_debugfs: bool = False,
    undo_script: Optional[str] = None,
) -> str: ...
def algorithms() -> list[str]: ...
