"""``show()``: one record of ``events`` with its neighbours in the same process stream, as
``journalctl -n`` or lnav would show them, and the command that opens it where it came from."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from logcorr.analysis import saved
from logcorr.render.terminal import shown_name
from logcorr.store.schema import short_position

NEIGHBOURS_SQL = """
WITH target AS (SELECT * FROM events WHERE event_id = getvariable('show_id')),
stream AS (
    SELECT e.*, row_number() OVER (ORDER BY e.ts NULLS FIRST, e.event_id) AS n
    FROM events AS e, target AS t
    WHERE e.source = t.source AND e.host IS NOT DISTINCT FROM t.host AND e.boot_id IS NOT DISTINCT FROM t.boot_id
      AND e.pid IS NOT DISTINCT FROM t.pid AND e.unit IS NOT DISTINCT FROM t.unit
)
SELECT s.*, s.event_id = getvariable('show_id') AS is_target FROM stream AS s
WHERE abs(s.n - (SELECT n FROM stream WHERE event_id = getvariable('show_id'))) <= getvariable('show_context')
ORDER BY s.n
"""


class ShowError(Exception):
    """No record with that event id in OUT."""


def show(out: Path, event_id: int, context: int = 3) -> str:
    """The record ``event_id`` of OUT's ``events`` with up to ``context`` records before and after it
    from the same process stream (same source, host, boot, pid and unit), oldest first, as text:
    a header line per record (time UTC, or as printed where the record prints no zone; role, ranks, pid,
    kind, ``source:position``), its message
    indented, the asked record marked ``>``; then, for a journal record, the ``journalctl`` command
    that opens it by its full cursor (or the ``sed`` that shows a text file's lines), with the input's
    absolute path as ingest saw it (``input_paths``). Raises ``ShowError`` when no record has that id,
    ``FileNotFoundError`` when OUT does not exist."""
    con = saved.connect(Path(out), only=set())  # NEIGHBOURS_SQL reads tables only
    con.execute(f"SET VARIABLE show_id = {int(event_id)}")
    con.execute(f"SET VARIABLE show_context = {int(context)}")
    rows = con.sql(NEIGHBOURS_SQL).pl()
    if rows.height == 0:
        raise ShowError(
            f"no record with event_id {event_id} in {out} (event ids are in every table's event_id column)"
        )
    lines = []
    for r in rows.iter_rows(named=True):
        ranks = " ".join(
            f"{k[:2].upper()}{r[k]}" for k in ("dp_rank", "pp_rank", "tp_rank", "ep_rank") if r[k] is not None
        )
        zone = " UTC" if r.get("zoned") is not False else " (as printed, zone not printed)"
        when = r["ts"].strftime("%Y-%m-%d %H:%M:%S.%f") + zone if r["ts"] else "no time"
        head = "  ".join(
            x
            for x in (
                when,
                r["role"],
                ranks,
                f"pid {r['pid']}" if r["pid"] else "",
                r["kind"],
                f"event {r['event_id']}",
            )
            if x
        )
        mark = ">" if r["is_target"] else " "
        lines.append(f"{mark} {head}  ({shown_name(r['source'])}:{short_position(r['source_pos'])})")
        lines += [f"{mark}     {line}" for line in (r["message"] or "").splitlines() or [""]]
    target = rows.filter(rows["is_target"]).row(0, named=True)
    pos = target["source_pos"] or ""
    where = shown_name(shlex.quote(input_paths(Path(out)).get(target["source"], target["source"])))
    if pos.startswith("s="):
        lines.append(
            f"\nin the journal: journalctl --directory {where} --cursor {shlex.quote(pos)} --no-pager | head -20"
        )
    elif pos.startswith("line "):
        n = int(pos[5:])
        lines.append(f"\nin the file: sed -n '{max(1, n - 5)},{n + 20}p' {where}")
    return "\n".join(lines)


def input_paths(out: Path) -> dict[str, str]:
    """``{source: absolute path}`` of OUT's inputs from its ``manifest.json`` (a source is as it was given,
    maybe relative to where ingest ran); empty for an OUT written before manifests kept the path."""
    try:
        inputs = json.loads((out / "manifest.json").read_text(encoding="utf-8")).get("inputs", [])
    except (OSError, ValueError):
        return {}
    return {
        i["source"]: i["path"] for i in inputs if isinstance(i, dict) and i.get("source") and i.get("path")
    }
