"""What an ingest says besides its tables: the notes of one input (``input_notes``) and of the run
(``result_notes``, ``roles_not_seen``), the progress line of a long input (``progress_line``), and the
summary ``logcorr ingest`` prints (``format_summary``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from logcorr.clocks import Clocks, clock_note
from logcorr.inputs import scrape
from logcorr.inputs.source import SourceReport
from logcorr.pipeline.plan import Plan
from logcorr.pipeline.run import IngestResult, Run
from logcorr.render.terminal import shown_name

# SGLang's request-metrics files (--export-metrics-to-file), named by the local hour they cover
METRICS_FILE = re.compile(r"^sglang-request-metrics-(?P<day>\d{8})_(?P<hour>\d\d)\.log")


def input_notes(plan: Plan, report: SourceReport, forced: str | None, clocks: Clocks) -> None:
    """What to know about how one input was read (``clocks``: its records' clocks)."""
    if forced and not report.records and plan.dumps_outside:
        report.notes.append(
            f"left out: --captured-at {plan.captured_at:%Y-%m-%d %H:%M:%S} is outside --since/--until"
        )
    if report.zoneless:
        report.notes.append(
            f"{report.zoneless:,} records carry only a time printed without a zone (SGLang prints local "
            "time): taken as printed, zone not printed; compare clock_offsets when a journal of the same "
            "host is at hand"
        )
    offset, n = clocks.offset()
    if offset is not None:
        report.notes.append(clock_note(offset, n))
    undated = report.records - report.zoned - report.zoneless
    hour = METRICS_FILE.search(Path(report.source).name)
    if hour and undated > 0:
        report.notes.append(
            f"{undated:,} request-metrics records carry no time (SGLang writes response_sent_to_client_ts"
            " since ≈2025-12): kept without a time; the file's name puts them in the hour from"
            f" {hour['day'][:4]}-{hour['day'][4:6]}-{hour['day'][6:]} {hour['hour']}:00, the engine's local time"
        )
    if report.yearless:
        report.notes.append(
            f"{report.yearless:,} journalctl short lines print no year and no line of this input prints one:"
            " kept without a time (a yearless line takes the year of the nearest dated line)"
        )
    if forced and report.records and report.first_ts is None:
        report.notes.append(
            "no time in the dump: give --captured-at (when it was taken) to place it on the timeline"
        )


def progress_line(given: Path, report: SourceReport, total: int | None, seconds: float) -> str:
    """``given: 17,878 records, 40 of 72 MB (55%), 12 MB/s, about 3 s left``, in bytes of the file given
    (``total`` its size): a reader that counts a copy (``report.copy_bytes``: unpacked, or a document
    flattened into lines of another size) has its count scaled to the file's, never past it; without
    ``total`` (or once the bytes counted pass it) the bytes read and the rate only."""
    done = report.bytes
    if total and report.copy_bytes:
        done = min(total, report.bytes * total // report.copy_bytes)
    rate = done / seconds if seconds > 0 else 0.0
    line = f"{given}: {report.records:,} records, "
    if total and done <= total:
        line += f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB ({100 * done / total:.0f}%)"
        left = f", about {(total - done) / rate:,.0f} s left" if rate else ""
    else:
        line, left = line + f"{done / 1e6:,.0f} MB read", ""
    return f"{line}, {rate / 1e6:,.1f} MB/s{left}"


def result_notes(run: Run) -> list[str]:
    """What to know about the run as a whole: how a time without a date was dated, ``--captured-at``
    not used, nothing of a known kind read."""
    notes = list(run.plan.window_notes)
    if run.plan.captured_at and not any(
        r.format in ("pyspy", "pyspy-json", scrape.FORMAT) for r in run.reports
    ):
        # (dumps a --since/--until window dropped are bare dumps: their own notes say so)
        notes.append(
            "--captured-at not used: no bare py-spy dump file nor Prometheus scrape among the inputs"
        )
    counts = run.counts
    known = {k for (role, k) in counts if k != "other"} | {r for (r, _) in counts} - {"unknown"}
    if counts and not known:
        shown = ", ".join(r.source for r in run.reports if r.records)[:300]
        notes.append(
            f"nothing SGLang-, router- or py-spy-like was found: the {sum(counts.values()):,} records "
            f"read ({shown}) are all of no known kind and no role; kept as kind 'other', but no "
            "saved query or report has anything to say about them (a journal: try --unit, see the units skipped)"
        )
    return notes


def roles_not_seen(roles: dict[str, str], seen: set[str]) -> list[str]:
    """A warning per ``--role NAME=ROLE`` whose NAME (or NAME.service) is no unit, pod or container any
    input holds, naming those it holds: the role was given to nothing."""
    return [
        f"--role {name}={role}: no input has a unit {name}"
        + ("" if name.endswith(".service") else f" or {name}.service")
        + f" (the units seen: {', '.join(sorted(seen)) or 'none'})"
        for name, role in roles.items()
        if name not in seen and f"{name}.service" not in seen
    ]


def format_summary(result: IngestResult) -> str:
    """The text ``logcorr ingest`` prints of ``result``: each input with its records, notes and errors (a
    note three or more inputs share said once), the inputs skipped and why, records per role and kind,
    the time span and its clock, rows per table, the time taken. Lines joined by ``\n``, no final one."""
    lines = ["inputs:"]
    pods = [r.source for r in result.reports if r.format == "skipped-pod"]
    read = [r for r in result.reports if r.format not in ("skipped", "skipped-pod")]
    # a note many inputs share (twelve dumps without a time) is said once, after them
    shared = Counter(n for r in read for n in dict.fromkeys(r.notes))
    shared = {n: k for n, k in shared.items() if k >= 3}
    for r in read:
        unknown = f" ({r.unparsed:,} of no known kind, kept as they are)" if r.unparsed else ""
        lines.append(f"  {r.source} [{r.format}]: {r.records:,} records{unknown}")
        lines += [f"    {n}" for n in r.notes if n not in shared]
        lines += [f"    error: {e}" for e in r.errors]
    lines += [f"  {k} inputs: {n}" for n, k in shared.items()]
    by_name = [
        r.source for r in result.reports if r.format == "skipped" and " is not a log " in "".join(r.notes)
    ]
    if by_name:
        lines.append(f"  skipped, not logs by their names (name a file to read it): {', '.join(by_name)}")
    # pipes, devices, links out of the folder, links to nothing: each with its own reason
    lines += [
        f"  skipped: {n}"
        for r in result.reports
        if r.format == "skipped" and r.source not in by_name
        for n in r.notes
    ]
    if pods:
        lines.append(
            "  pods skipped, not SGLang by their names or first lines (--unit NAME or --all-units reads them): "
            + ", ".join(pods)
        )
    lines += [f"  {n}" for n in result.notes]
    lines.append("records per role and kind:")
    for role, kinds in result.by_role_kind.items():
        lines.append(
            f"  {role:<8} " + ", ".join(f"{k} {n:,}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        )
    if result.first_ts is None:
        lines.append("time span: none (no record carries a time; give --captured-at for bare py-spy files)")
    else:
        zoned, loose = (sum(getattr(r, a) for r in result.reports) for a in ("zoned", "zoneless"))
        clock = (
            "UTC"
            if not loose
            else "as printed, zone not printed"
            if not zoned
            else f"UTC, {zoned:,} record(s)"
        )
        span = (
            f"time span: {result.first_ts:%Y-%m-%d %H:%M:%S} .. {result.last_ts:%Y-%m-%d %H:%M:%S} ({clock})"
        )
        if result.zoneless_span:  # two clocks: never one span from a zoneless time to a UTC one
            a, b = result.zoneless_span
            span += f"; {a:%Y-%m-%d %H:%M:%S} .. {b:%Y-%m-%d %H:%M:%S} ({loose:,} record(s) printed without a zone, as printed)"
        lines.append(span)
    lines.append("tables: " + ", ".join(f"{t} {n:,}" for t, n in result.rows.items()))
    rate = result.lines / result.seconds if result.seconds else 0
    lines.append(
        f"wrote {result.out} in {result.seconds:.1f} s ({result.lines:,} lines, {rate:,.0f} lines/s)"
    )
    return names_shown("\n".join(lines), result.reports)


def names_shown(text: str, reports: list[SourceReport]) -> str:
    """``text`` with each input's name that holds a newline or other control shown escaped
    (``terminal.shown_name``) wherever it stands: one name is one line, and forges none."""
    for r in sorted(reports, key=lambda r: -len(r.source)):
        if (shown := shown_name(r.source)) != r.source:
            text = text.replace(r.source, shown)
    return text


def said_after(result: IngestResult, out: Path) -> tuple[list[str], str | None]:
    """What ``logcorr ingest`` says on stderr after its summary: a ``warning:`` line per option that
    named nothing in the data, the first three ``error:`` lines of each input not read whole; and the
    line of its exit status 3 when OUT was written but an input could not be read at all or was read
    only in part (None when every input was read)."""
    lines = [f"warning: {w}" for w in result.warnings]
    lines += [f"error: {e}" for r in result.reports if r.unread or r.incomplete for e in r.errors[:3]]
    lines = [names_shown(line, result.reports) for line in lines]
    unread = [r.source for r in result.reports if r.unread]
    if unread:  # the others were read and written
        said = f"{out} written, but {len(unread)} input(s) could not be read at all: {', '.join(unread)}"
        return lines, names_shown(said, result.reports)
    partial = [r.source for r in result.reports if r.incomplete]
    if partial:  # a journalctl killed part way, a corrupt journal: what came is in OUT, the rest is not
        said = f"{out} written, but {len(partial)} input(s) were read only in part: {', '.join(partial)}"
        return lines, names_shown(said, result.reports)
    return lines, None
