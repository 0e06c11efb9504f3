"""Evidence files as the fleet reads them: an input told as evidence or capture by its first
bytes, the ``host`` map read from a bounded prefix, and a copy out of object storage bounded by
zmem's read ceiling."""

from __future__ import annotations

import json
import os

import pyarrow.fs as pafs

from .inputs import _fs


# The first bytes of every evidence file (``zmem_lab::findings::is_evidence``'s rule): a task
# tells an evidence file from a capture by its first 32 bytes.
EVIDENCE_HEAD = b'{"format":"zmem-evidence"'
HEAD_BYTES = 32
# How much of an evidence file is read for its host and labels (they come first in it).
_HOST_PREFIX = 1 << 16


def input_kind(path: str) -> str:
    """``"evidence"`` where the file's first 32 bytes start with :data:`EVIDENCE_HEAD` (``zmem
    lab FILE``'s rule), else ``"capture"``; reads those bytes only."""
    fs, p = _fs(path)
    with fs.open_input_file(p) as f:
        head = f.read(HEAD_BYTES)
    return "evidence" if head.startswith(EVIDENCE_HEAD) else "capture"


def _copy_bounded(fs: pafs.FileSystem, p: str, local: str, name: str) -> None:
    """``p`` of ``fs`` copied to the new file ``local`` (0600), refused past zmem's read
    ceiling in the Rust reader's words, before the copy where the storage states the size."""
    from .. import _native

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
