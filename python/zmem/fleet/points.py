"""The operating point (lab report schema 8: ``zmem_lab::operating``): a candidate's savings at
today's pressure and at the cold age T as flat result columns, a host's point and its own
decision's savings there (None where its lab did not read them), and those columns' types
where no host read them."""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa


# A candidate's figures at the points, nested in the report, flat in the rows.
AT_POINT_COLUMNS = {
    "at_today": "memory_saved_at_today_bytes",
    "at_cold_age": "memory_saved_at_cold_age_bytes",
}
# The host's point, on each of its rows.
HOST_POINT_COLUMNS = ("operating_point", "cold_age_secs", "cold_bytes")
# Their types where no host read them (every value None would give Arrow's null type).
_POINT_TYPES = {
    **{c: pa.int64() for c in AT_POINT_COLUMNS.values()},
    "operating_point": pa.string(),
    "cold_age_secs": pa.int64(),
    "cold_bytes": pa.int64(),
}


def _today_read(op: Optional[dict[str, Any]]) -> bool:
    """Whether the host's lab read today's pressure: its reason is not ``no_reading`` (pages
    away from their machine, or no reading at all)."""
    reason = ((op or {}).get("today") or {}).get("reason") or {}
    return reason.get("kind") not in (None, "no_reading")


def saved_at(cand: dict[str, Any], op: Optional[dict[str, Any]], point: str) -> Optional[int]:
    """A candidate's ``memory_saved_bytes`` at ``point`` (``today`` or ``cold_age``) of the
    host's operating point ``op``; None where the host's lab did not read that point: no
    ``op`` (a report before schema 8), today's pressure not read (its zeros are not a saving),
    or no cold curve reaching T."""
    if point == "today":
        at = cand.get("at_today") if _today_read(op) else None
    elif point == "cold_age":
        at = cand.get("at_cold_age") if (op or {}).get("cold") else None
    else:
        raise ValueError(f"{point!r} is not an operating point (today or cold_age)")
    return None if at is None else at.get("memory_saved_bytes")


def candidate_columns(cand: dict[str, Any], op: Optional[dict[str, Any]]) -> dict[str, Any]:
    """A candidate's fields as result columns: as the report has them, less its name, with its
    savings at today's point and at the cold age flat (:data:`AT_POINT_COLUMNS`)."""
    row = {k: v for k, v in cand.items() if k != "name" and k not in AT_POINT_COLUMNS}
    for point, column in zip(("today", "cold_age"), AT_POINT_COLUMNS.values()):
        row[column] = saved_at(cand, op, point)
    return row


def host_point(report: dict[str, Any]) -> dict[str, Any]:
    """A host's operating point and its own decision's savings: ``operating_point`` (the point
    the decision's ``memory_saved_bytes`` is at: ``today``, ``cold_age`` or ``all_pages``),
    ``cold_age_secs`` (T) and ``cold_bytes`` (anonymous bytes idle for T), and the decided
    configuration's ``memory_saved_bytes`` (every page swapped, as before schema 8),
    ``memory_saved_at_today_bytes`` and ``memory_saved_at_cold_age_bytes`` (0 for keep). None
    where the lab did not read it: a report before schema 8 has no point; a capture the fleet
    ran (``observe=0``, away from its machine) is at ``all_pages``, with neither today's
    pressure nor a cold curve."""
    d = report["decision"]
    op = d.get("operating_point")
    cold = (op or {}).get("cold") or {}
    i = d.get("chosen")
    cands = report["candidates"]
    chosen = cands[i] if i is not None and 0 <= i < len(cands) else None
    keep = d.get("kind") == "keep"

    def decided(point: str) -> Optional[int]:
        v = None if chosen is None else saved_at(chosen, op, point)
        # Keeping what runs saves nothing at any point, as the decision says.
        return 0 if keep and v is not None else v

    return {
        "operating_point": (op or {}).get("named"),
        "cold_age_secs": cold.get("age_secs"),
        "cold_bytes": cold.get("cold_bytes"),
        "memory_saved_bytes": d.get("all_pages_saved_bytes", d["memory_saved_bytes"]),
        "memory_saved_at_today_bytes": decided("today"),
        "memory_saved_at_cold_age_bytes": decided("cold_age"),
    }


def _typed(table: pa.Table) -> pa.Table:
    """The point columns with their types where every value is None (Arrow's null type)."""
    for name, t in _POINT_TYPES.items():
        i = table.schema.get_field_index(name)
        if i >= 0 and pa.types.is_null(table.schema.field(i).type):
            table = table.set_column(i, name, table.column(i).cast(t))
    return table
