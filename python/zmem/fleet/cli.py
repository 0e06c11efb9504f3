"""The command line of ``zmem-fleet`` (and ``python -m zmem.fleet``): the argument parser, with
the lab's options as flags from their declarations in two groups (those that judge, those that
measure), and :func:`main`, which runs the fleet and prints its summary, notes and skipped
inputs on stderr."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any, Optional, Sequence, Union

from .driver import run
from .options import lab_options


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
