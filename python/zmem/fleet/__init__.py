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

# The package is split by job, one module each: inputs (where the inputs are), evidence (telling
# and reading evidence files), tasks (the Ray task's body), options (the lab's options on the
# fleet), points (the operating point), choice (each host's answer and the fleet's), results
# (FleetResult and the results table), driver (the run on Ray), boxplot and report (report.html),
# cli (the command line). Every name below stays importable from zmem.fleet as before the split,
# the private helpers the tests use included.

from __future__ import annotations

from .boxplot import _box_svg, _mib, _quantile
from .choice import FLEET_RULE, _host_answer, fleet_choice, host_choice, per_config
from .cli import DESCRIPTION, EPILOG, _TYPES, _add_lab_option, _count_or_word, _parser, main
from .driver import _bar, _init_ray, _NoBar, _one_line, run
from .evidence import (
    _HOST_PREFIX,
    EVIDENCE_HEAD,
    HEAD_BYTES,
    _copy_bounded,
    evidence_host,
    input_kind,
)
from .inputs import (
    _GLOB_CHARS,
    HOSTS_CSV,
    _base_name,
    _dir_of,
    _expand_one,
    _fs,
    _is_uri,
    _listable,
    _stem,
    expand,
    host_table,
)
from .options import FLEET_SETS, _judging, _lab_args, _notes, lab_options
from .points import (
    _POINT_TYPES,
    AT_POINT_COLUMNS,
    HOST_POINT_COLUMNS,
    _today_read,
    _typed,
    candidate_columns,
    host_point,
    saved_at,
)
from .report import (
    INPUT_NOTE,
    POINT_NOTE,
    _budgets,
    _inputs_html,
    _inputs_line,
    _points_html,
    render_html,
)
from .results import Failure, FleetResult, _empty_table, _gather
from .tasks import _private_tmpdir, analyse, judge_evidence

__all__ = [
    "AT_POINT_COLUMNS",
    "DESCRIPTION",
    "EPILOG",
    "EVIDENCE_HEAD",
    "FLEET_RULE",
    "FLEET_SETS",
    "HEAD_BYTES",
    "HOSTS_CSV",
    "HOST_POINT_COLUMNS",
    "INPUT_NOTE",
    "POINT_NOTE",
    "Failure",
    "FleetResult",
    "analyse",
    "candidate_columns",
    "evidence_host",
    "expand",
    "fleet_choice",
    "host_choice",
    "host_point",
    "host_table",
    "input_kind",
    "judge_evidence",
    "lab_options",
    "main",
    "per_config",
    "render_html",
    "run",
    "saved_at",
]
