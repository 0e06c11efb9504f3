"""The lab's options on the fleet: those it passes on to every host's lab, those it sets itself,
the keyword arguments of each host's ``zmem.lab`` (checked before any task starts), the ones an
evidence file's lab takes (those that judge), and the notes on options that did not apply to
every host."""

from __future__ import annotations

from typing import Any, Sequence


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
    from .. import _native

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
