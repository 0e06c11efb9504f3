"""Where the inputs are: the arguments of ``zmem-fleet`` (directories, globs, ``@FILE`` lists,
comma-separated lists, files; local paths or URIs pyarrow.fs opens) expanded into input files,
the filesystem of each, the names taken from their paths, and the ``hosts.csv`` beside them."""

from __future__ import annotations

import csv
import fnmatch
import glob
import io
import os
from typing import Sequence

import pyarrow.fs as pafs


HOSTS_CSV = "hosts.csv"
_GLOB_CHARS = set("*?[")


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
