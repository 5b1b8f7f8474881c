"""What an ingest says besides its tables: the notes of one input (``input_notes``) and of the run
(``result_notes``, ``roles_not_seen``), and the progress line of a long input (``progress_line``).
"""

from __future__ import annotations

import re
from pathlib import Path

from logcorr.clocks import Clocks, clock_note
from logcorr.inputs import scrape
from logcorr.inputs.source import SourceReport
from logcorr.pipeline.plan import Plan
from logcorr.pipeline.run import Run

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
    """``given: 17,878 records, 40 of 72 MB (55%), 12 MB/s, about 3 s left``; without ``total``
    (or once the bytes counted pass it) the bytes read and the rate only."""
    done, rate = report.bytes, report.bytes / seconds if seconds > 0 else 0.0
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
