"""One option path: the lab's options are declared once in the Rust library
(`zmem_lab::request::LAB_OPTIONS`, here `zmem.lab_options()`), and every door maps onto that
declaration: `zmem lab`'s flags, `zmem.lab`'s keyword arguments and `zmem-fleet`'s lab flags.
Each test fails when a door's default or words drift from it."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

import zmem
from conftest import cli_error, run_cli
from zmem import fleet

OPTIONS = zmem.lab_options()


def test_the_clis_flags_and_defaults_are_the_declarations(zmem_bin: str) -> None:
    p = run_cli(zmem_bin, "lab", "--help")
    assert p.returncode == 0, p.stderr
    blocks = {}
    for block in re.split(r"\n(?=\s+(?:-\w, )?--)", p.stdout):
        m = re.match(r"\s+(?:-\w, )?(--[a-z-]+)", block)
        if m:
            blocks[m.group(1)] = block
    for o in OPTIONS:
        assert o["flag"] in blocks, o["flag"]
        stated = re.search(r"\[default: ([^\]]+)\]", blocks[o["flag"]])
        assert (stated and stated.group(1)) == (o["default"] or None), o
    assert zmem.defaults("lab") == {o["name"]: o["default"] for o in OPTIONS if o["default"]}


def test_zmem_lab_takes_each_option_and_states_no_default() -> None:
    params = inspect.signature(zmem.lab).parameters
    doc = " ".join((zmem.lab.__doc__ or "").split())
    for o in OPTIONS:
        p = params[o["name"]]
        assert p.kind == p.KEYWORD_ONLY, o["name"]
        assert p.default is (False if o["kind"] == "flag" else None), (o["name"], p.default)
        assert f"``{o['name']}``: {' '.join(o['help'].split())}" in doc, o["name"]
    # The default sample is stated by the declaration, read from the Rust constant only.
    sample = next(o for o in OPTIONS if o["name"] == "sample")["default"]
    assert sample and f"--sample {sample}`" in doc


def test_fleets_lab_flags_and_defaults_are_the_declarations() -> None:
    """zmem-fleet passes the lab's options not about the machine it runs on (less `threads`,
    its own): each a flag defaulting to None (the lab's default), its help stating the lab's."""
    ap = fleet._parser()
    actions = {a.dest: a for a in ap._actions}
    passed = [o for o in OPTIONS if not o["live"] and o["name"] not in fleet.FLEET_SETS]
    assert {o["name"] for o in fleet.lab_options()} == {o["name"] for o in passed}
    assert {"cpu_budget", "latency_budget", "max_pages", "min_time_ms"} <= set(actions)
    for o in OPTIONS:
        if o not in passed:
            assert o["name"] not in actions, o["name"]
            continue
        a = actions[o["name"]]
        assert a.default is None and o["flag"] in a.option_strings, o["name"]
        if o["default"] is not None:
            assert (a.help or "").endswith(f"(default: the lab's, {o['default']})"), a.help
    args = ap.parse_args(["caps", "--out", "o"])
    given = {o["name"]: getattr(args, o["name"]) for o in passed}
    assert fleet._lab_args(given) == fleet.FLEET_SETS
    args = ap.parse_args(["caps", "--out", "o", "--max-pages", "all", "--cpu-budget", "2"])
    given = {o["name"]: getattr(args, o["name"]) for o in passed}
    assert fleet._lab_args(given) == {"max_pages": "all", "cpu_budget": 2.0, **fleet.FLEET_SETS}


# A bad value of each kind of option, as Python passes it; the CLI gets its `str()`.
BAD: list[tuple[str, Any]] = [
    ("observe", -1),
    ("sample", 1),
    ("threads", 10**6),
    ("min_time_ms", 10**40),
    ("cpu_budget", -1),
    ("latency_budget", float("nan")),
    ("max_pages", 0),
    ("max_pages", "many"),
    ("swap_device", "nvm3"),
    ("source", "disk"),
    ("cold_age", "0s"),
    ("cgroup_limit", "relative=1G"),
]


@pytest.mark.parametrize("name,value", BAD, ids=lambda v: str(v))
def test_a_bad_value_is_refused_in_the_same_words_by_both_doors(
    zmem_bin: str, name: str, value: Any
) -> None:
    """The option's one parser refuses it: the same reason, each door naming the option its
    own way (`--observe -1: ...`, `observe=-1: ...`)."""
    flag = "--" + name.replace("_", "-")
    # Refused before anything is read or measured, in both doors.
    cli = cli_error(zmem_bin, "lab", f"{flag}={value}")
    with pytest.raises(ValueError) as e:
        zmem.lab(**{name: value})
    py = str(e.value)
    (cli_head, cli_why), (py_head, py_why) = cli.split(": ", 1), py.split(": ", 1)
    assert cli_why == py_why, (cli, py)
    assert cli_head.startswith(flag), cli
    given = cli_head[len(flag) :].strip()
    assert py_head == (f"{name}={given}" if given else name), (cli, py)


# The operating point's options, each refused by name before anything is read: an age of 0
# (nothing is idle for no time), and a cgroup that is not an absolute path.
POINT_BAD = [
    ("cold_age", "0s", "an age must be over 0 s"),
    ("cold_age", "2 days", "is not an age"),
    ("cgroup_limit", "relative=1G", "is not a cgroup's absolute path"),
    ("cgroup_limit", "/sys/fs/cgroup/app=0", "is not a size over 0"),
    ("cgroup_limit", "/sys/fs/cgroup/app", "is not CGROUP=SIZE"),
]


@pytest.mark.parametrize("name,value,why", POINT_BAD, ids=lambda v: str(v))
def test_the_operating_points_options_are_refused_by_name(name: str, value: str, why: str) -> None:
    with pytest.raises(ValueError) as e:
        zmem.lab(**{name: value})
    msg = str(e.value)
    assert msg.startswith(f"{name}"), msg
    assert why in msg and "\n" not in msg, msg


def test_the_operating_points_options_are_documented_and_live() -> None:
    """zmem.lab takes them (text, text and a flag), and the fleet does not: they are about the
    machine the lab runs on, which a capture analysed elsewhere is not."""
    params = inspect.signature(zmem.lab).parameters
    kinds = {o["name"]: o["kind"] for o in OPTIONS}
    assert {n: kinds.get(n) for n in ("cold_age", "no_cold", "cgroup_limit")} == {
        "cold_age": "text", "no_cold": "flag", "cgroup_limit": "text"}
    assert params["no_cold"].default is False and params["cold_age"].default is None
    cold = next(o for o in OPTIONS if o["name"] == "cold_age")
    assert cold["default"] and "``cold_age``" in (zmem.lab.__doc__ or "")
    assert not {"cold_age", "no_cold", "cgroup_limit"} & {o["name"] for o in fleet.lab_options()}


def test_unknown_options_and_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError, match="'obsreve'"):
        zmem.lab(obsreve=0)
    with pytest.raises(TypeError, match=r"observe: expected an int, got str"):
        zmem.lab(observe="10")
    with pytest.raises(TypeError, match=r"no_capture: expected True or False"):
        zmem.lab(no_capture=1)
    with pytest.raises(ValueError, match="give max_pages or sample, not both"):
        zmem.lab(max_pages=10, sample=10)
    with pytest.raises(TypeError, match="'observe'"):
        fleet.run(["x"], observe=0)  # about the machine: not an option of the fleet
    with pytest.raises(ValueError, match=r"^cpu_budget=-1: must be a number >= 0$"):
        fleet.run(["x"], cpu_budget=-1)


def test_the_proactive_options_are_there_and_checked() -> None:
    """no_proactive (a flag) and exclude (text) reach the lab; a bad exclude entry is refused
    by name before anything runs, and the fleet does not take them (they are about the machine
    the lab runs on)."""
    params = inspect.signature(zmem.lab).parameters
    kinds = {o["name"]: o["kind"] for o in OPTIONS}
    assert (kinds.get("no_proactive"), kinds.get("exclude")) == ("flag", "text")
    assert params["no_proactive"].default is False and params["exclude"].default is None
    with pytest.raises(ValueError) as e:
        zmem.lab(exclude="a name far longer than fifteen")
    assert str(e.value).startswith("exclude") and "process name" in str(e.value)
    assert not {"no_proactive", "exclude"} & {o["name"] for o in fleet.lab_options()}
