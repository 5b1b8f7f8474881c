"""``load()``: OUT's tables into one ``Swimlanes`` (lanes, activity, marks, captures, wedges, verdict),
and the wedge spans and verdict it takes from the saved ``wedge`` query and ``logcorr report``.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from logcorr.analysis import saved
from logcorr.interrupts import is_interrupt
from logcorr.render.timeline.duck import (
    count_activity,
    duck_connection,
    load_clock_notes,
    load_last_batches,
    load_load,
    load_runs,
)
from logcorr.render.timeline.fold import rank_hosts
from logcorr.render.timeline.model import (
    MAX_ACTIVITY_MARKS,
    MAX_DETAIL_LINES,
    ROLE_ORDER,
    Swimlanes,
    TimelineError,
    Wedge,
    nice_bin_seconds,
)
from logcorr.render.timeline.tables import (
    assign_lanes,
    group_fingerprints,
    load_batches,
    load_captures,
    load_marks,
    load_requests,
    load_scrapes,
    load_sources,
    parse_time,
    room_filter,
    scan,
)
from logcorr.store.schema import UTC_US


def load(
    out: Path,
    *,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    room: int | None = None,
    role: str | None = None,
    detail: bool | None = None,
    max_lines: int = MAX_ACTIVITY_MARKS,
    max_detail: int = MAX_DETAIL_LINES,
) -> Swimlanes:
    """Read OUT's tables into ``Swimlanes`` for drawing or export, in memory bounded by what is drawn.

    Args:
        out: a folder written by ``logcorr ingest``.
        since, until: keep what happened in this window (ISO 8601, UTC unless a zone is given, or a
            time of day on the data's first day).
        room: keep only the markers and router requests of this ``bootstrap_room`` (and its rids, via
            the ``rooms`` table); batches and captures stay for context. Without ``since``/``until``
            the window closes around the room's events (one minute either side).
        role: keep only the lanes of this role (``prefill``, ``decode``, ``router``).
        detail: read every batch line and router request of the window (``True``), or draw activity
            as runs only (``False``); ``None`` (default): lines when the window holds at most
            ``max_lines`` of them (batch lines plus ok router requests), else runs.
        max_lines: see ``detail``.
        max_detail: with ``detail=True``, the most lines a window may hold; more is refused (the
            lines are held in memory, and the drawing would not open).

    Raises:
        TimelineError: ``out`` is not a logcorr output folder, or an option is invalid.
    """
    out = Path(out)
    t0, t1 = _window(out, since, until, role)
    # the report's rows first, before any frame is held: its queries are the costliest reads of a fleet,
    # run once (verdict, focus, summary and wedges), and their memory is given back before the rest
    rows = _report_rows(out)
    filters: list[str] = []
    marks = load_marks(out, t0, t1)
    requests = None
    if room is not None:
        marks, requests, t0, t1 = _of_room(out, marks, room, t0, t1, filters)
    activity = _activity(out, t0, t1, role, (detail, max_lines, max_detail), marks, requests)
    captures, undated = load_captures(out, t0, t1)
    notes = _window_words(filters, t0, t1, role, undated)
    frames = {
        "batches": activity["batches"],
        "last_batches": activity["last_batches"],
        "marks": marks,
        "captures": captures,
        "requests": activity["requests"],
        "runs": activity["runs"],
    }
    if not any(df.height for df in frames.values()):
        _nothing_to_draw(out, filters)
    frames["load"] = activity["load"].with_columns(pl.lit(None, pl.String).alias("source"))
    lanes, placed = assign_lanes(frames, role)
    first, last = _bounds([df for name, df in placed.items() if name != "load"], placed["runs"])
    placed["captures"] = group_fingerprints(placed["captures"])
    placed["load"] = placed["load"].drop("source")
    sw = Swimlanes(
        out=out,
        lanes=lanes,
        **placed,
        first=t0 or first,
        last=t1 or last,
        sources=load_sources(out),
        filters=filters,
        notes=notes,
        **{k: activity[k] for k in ("clock_notes", "bucket_s", "detail", "totals")},
    )
    sw.scrapes = load_scrapes(out, t0, t1, role)
    sw.wedges, notes = wedges(out, rows.get("wedge") if isinstance(rows, dict) else None)
    sw.notes += notes
    sw.verdict, sw.focus = findings(out, rows)
    sw.summary = summary(out, rows)
    if isinstance(rows, dict) and "findings" in rows:
        sw.host_rank = rank_hosts(rows["findings"])
    sw.since, sw.until = t0 if since is not None else None, t1 if until is not None else None
    return sw


def _window(out: Path, since, until, role: str | None) -> tuple[datetime | None, datetime | None]:
    """Check OUT and the options; ``since``/``until`` as UTC datetimes (a time of day on the data's
    first day). Raises ``TimelineError``."""
    if not (out / "manifest.json").exists():
        raise TimelineError(
            f"{out}: not a logcorr output folder (no manifest.json); run logcorr ingest first"
        )
    if role is not None and role not in ROLE_ORDER:
        raise TimelineError(f"--role {role!r}: expected one of {', '.join(ROLE_ORDER)}")
    day = None
    if isinstance(since, str) or isinstance(until, str):
        day = scan(out, "events", {"ts": UTC_US}).select(pl.col("ts").min()).collect().item()
    t0, t1 = parse_time(since, day=day), parse_time(until, day=day)
    if t0 is not None and t1 is not None and t1 <= t0:
        raise TimelineError(f"--until {until} is not after --since {since}")
    return t0, t1


def _window_words(filters: list[str], t0, t1, role: str | None, undated: int) -> list[str]:
    """Add the window and role to ``filters`` (words for the page); returns the notes: the py-spy
    captures without a time that are not drawn."""
    if t0 is not None:
        filters.append(f"since {t0:%Y-%m-%d %H:%M:%S} UTC")
    if t1 is not None:
        filters.append(f"until {t1:%Y-%m-%d %H:%M:%S} UTC")
    if role is not None:
        filters.append(f"role {role}")
    if not undated:
        return []
    return [
        f"{undated} py-spy capture(s) carry no capture time and are not drawn: logcorr query stuck_ranks lists them; logcorr ingest --captured-at gives bare dump files a time"
    ]


def _of_room(out: Path, marks: pl.DataFrame, room: int, t0, t1, filters: list[str]):
    """The marks and router requests of ``room`` (filters gets its words); without a window, the
    window one minute around them. Returns (marks, requests, t0, t1)."""
    marks, requests, rids = room_filter(out, marks, load_requests(out, t0, t1), room)
    filters.append(f"room {room}" + (f" ({len(rids)} rids)" if rids else ""))
    if marks.is_empty() and requests.is_empty():
        raise TimelineError(f"--room {room}: no abort, transfer error or request names this room")
    if t0 is None and t1 is None:
        both = pl.concat([marks.select("ts"), requests.select("ts")])
        t0 = both["ts"].min() - timedelta(minutes=1)
        t1 = both["ts"].max() + timedelta(minutes=1)
        marks = marks.filter(pl.col("ts").is_between(t0, t1))
        requests = requests.filter(pl.col("ts").is_between(t0, t1))
    return marks, requests, t0, t1


def _activity(out: Path, t0, t1, role, limits: tuple, marks: pl.DataFrame, requests) -> dict:
    """Batches (lines or runs), router requests, last batches, load buckets and clock notes of the
    window, the aggregations in DuckDB. ``limits``: (detail, max_lines, max_detail) as ``load`` takes
    them; ``marks`` (read before) count in the span the load buckets divide; ``requests``: already
    read (a room's), or None."""
    detail, max_lines, max_detail = limits
    con, spill = duck_connection(out)
    try:
        totals = count_activity(con, out, t0, t1, role)
        n_lines = totals["batches"] + totals["requests"]
        if detail is None:
            detail = n_lines <= max_lines
        elif detail and n_lines > max_detail:
            raise TimelineError(
                f"--detail: the window holds {n_lines:,} batch and router request lines, more than "
                f"{max_detail:,} (a line each would need gigabytes and not open); narrow it with "
                "--since/--until, or leave --detail out to draw runs"
            )
        if requests is None:
            requests = load_requests(out, t0, t1, errors_only=not detail)
        batches = load_batches(out, t0, t1, empty=not detail)
        runs = load_runs(con, out, t0, t1)
        last_batches = load_last_batches(con, t0, t1)
        clock_notes = load_clock_notes(con, t0, t1)
        first, last = _bounds([marks, requests, batches, runs, last_batches], runs)
        span_s = ((t1 or last) - (t0 or first)).total_seconds() if first else 1.0
        bucket_s = nice_bin_seconds(max(span_s, 1.0))
        load_ = load_load(con, out, t0, t1, bucket_s)
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    return dict(
        totals=totals,
        detail=detail,
        requests=requests,
        batches=batches,
        runs=runs,
        last_batches=last_batches,
        clock_notes=clock_notes,
        bucket_s=bucket_s,
        load=load_,
    )


def _bounds(frames: list[pl.DataFrame], runs: pl.DataFrame) -> tuple[datetime | None, datetime | None]:
    """The first ``ts`` and the last ``ts`` or run ``end`` of ``frames`` (None without a row)."""
    stamps = [df["ts"] for df in frames if df.height] + ([runs["end"]] if runs.height else [])
    return (min(s.min() for s in stamps), max(s.max() for s in stamps)) if stamps else (None, None)


def _nothing_to_draw(out: Path, filters: list[str]) -> None:
    """Raise the ``TimelineError`` that says why nothing is drawn (and the data's span, if known)."""
    if not filters:  # e.g. bare py-spy files ingested without --captured-at
        raise TimelineError(f"{out}: nothing to draw: no record carries a time")
    try:
        first, last = json.loads((out / "manifest.json").read_text())["time_span"]
        span = f": the data runs from {first} to {last} (UTC)"
    except (OSError, ValueError, KeyError, TypeError):  # a combined folder has no one manifest
        span = ""
    raise TimelineError(f"nothing to draw with {', '.join(filters)}{span}")


# a row of the ``wedge`` query that is shaded and framed (an idle gap is not)
_STOPPED = pl.col("verdict").str.contains(r"^(wedged|stalled)")


def wedges(out: Path, rows: pl.DataFrame | None = None) -> tuple[list[Wedge], list[str]]:
    """The wedged or stalled spans, from the saved ``wedge`` query (rows whose verdict says
    ``wedged`` or ``stalled``; an idle gap is not shaded), run here unless its ``rows`` are given
    (``report.gather``'s). Returns the spans and, when the query could not run, a note saying why."""
    try:
        rows = saved.query(out, "wedge") if rows is None else rows
    except (saved.QueryError, FileNotFoundError) as e:
        return [], [f"no wedge shading: {e}"]
    found = []
    for r in rows.filter(_STOPPED).iter_rows(named=True):
        end, by = r["restart_ts"], "restart"
        if end is None:
            end, by = r["resumed_ts"], "next batch" if r["resumed_ts"] is not None else "end of data"
        found.append(
            Wedge(
                role=r["role"],
                stopped=r["stopped_ts"],
                resumed=end,
                ranks=r["ranks_stopped"],
                other_went_on=r["other_role_continued"],
                resumed_by=by,
                health_ok=r["health_kept_200"],
                verdict=r["verdict"],
                batches_again=r["resumed_ts"],
            )
        )
    return found, []


def _report_rows(out: Path) -> dict[str, pl.DataFrame] | Exception:
    """The rows of ``report.gather(out)``, or the exception it raised (the page still draws)."""
    try:
        from logcorr.render import report

        return report.gather(out)
    except Exception as e:  # noqa: BLE001 — the swimlanes must still draw when the report cannot be told
        if is_interrupt(e):
            raise
        return e


def findings(
    out: Path, rows: dict[str, pl.DataFrame] | Exception | None = None
) -> tuple[list[str], tuple[datetime, datetime, str] | None]:
    """The verdict of ``logcorr report`` (``report.verdict``: its findings as Markdown text, so the
    page and the report say the same; when the report fails, one line saying so and the drawing goes
    on) and the span to open the page on with its name, from the same rows (``report.gather``, or
    ``rows`` as ``_report_rows`` gave them; see ``_focus``).
    ``None`` when no row says wedged or stalled or the report fails. Times are aware UTC datetimes."""
    try:
        from logcorr.render import report

        rows = _report_rows(out) if rows is None else rows
        if isinstance(rows, Exception):
            raise rows
        with report.drawn(rows):
            lines = report.verdict(rows)
    except Exception as e:  # noqa: BLE001 — the swimlanes must still draw when the verdict cannot be told
        if is_interrupt(e):
            raise
        return [f"(no verdict: logcorr report failed: {type(e).__name__}: {e})"], None
    return lines, _focus(rows)


def summary(out: Path, rows: dict[str, pl.DataFrame] | Exception | None = None) -> list[str]:
    """The summary lines that lead ``logcorr report`` (``report.summary_lines``), for the page's
    header, from ``rows`` as ``findings`` takes them; empty when the report fails (the verdict then
    says why)."""
    try:
        from logcorr.render import report

        rows = _report_rows(out) if rows is None else rows
        if isinstance(rows, Exception):
            return []
        return report.summary_lines(rows)
    except Exception as e:  # noqa: BLE001 — the swimlanes must still draw when the summary cannot be told
        if is_interrupt(e):
            raise
        return []


# the chain's steps before a stop that belong to it: at most this long before it
FOCUS_LOOKBACK = timedelta(minutes=10)


def _focus(rows: dict[str, pl.DataFrame]) -> tuple[datetime, datetime, str] | None:
    """The causal chain of the first wedged or stalled stop: from its first step before the stop
    (the abort burst's first abort or the ``transfer_infos`` assertion, within ``FOCUS_LOOKBACK``)
    to the stop, the last batch of the role, named ``"the chain"``. A stop with no such step before
    it: the stop to the restart or the next batch (else the end of the stall), ``"the wedge"``."""
    wedge = rows.get("wedge")
    if wedge is None or wedge.is_empty():
        return None
    stops = wedge.filter(_STOPPED).sort("stopped_ts")
    if stops.is_empty():
        return None
    w = stops.row(0, named=True)
    stop = w["stopped_ts"]
    chain = rows.get("incident_chain")
    if chain is not None and chain.height:
        before = chain.filter(
            pl.col("step").is_in(["abort_burst", "assertion"]),
            pl.col("ts").is_between(stop - FOCUS_LOOKBACK, stop),
        )
        if before.height:
            return before["ts"].min(), stop, "the chain"
    end = w["restart_ts"] or w["resumed_ts"] or stop + timedelta(seconds=w["stalled_s"] or 0)
    return stop, max(end, stop), "the wedge"
