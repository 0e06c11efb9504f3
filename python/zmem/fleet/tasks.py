"""One input: the Ray task's body. A capture measured and judged by the lab (``observe=0``), an
evidence file judged as ``zmem lab FILE`` does, each in a private temporary directory; the
input's host, labels, kind and the lab's report. Module-level functions, so Ray pickles them by
reference (``zmem.fleet.tasks.analyse``)."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

import pyarrow.fs as pafs

from .evidence import _HOST_PREFIX, _copy_bounded, evidence_host, input_kind
from .inputs import _fs
from .options import _judging


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
