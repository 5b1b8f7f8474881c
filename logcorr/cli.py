"""The ``logcorr`` command: parses options, calls the library, prints. Nothing below imports typer.

Each command wires its options to a library function (``logcorr.ingest``, ``analysis.saved``,
``render.*``, ``store.*``, ``collect``); what every command shares on the terminal (one line and an
exit code per failure, interrupts, progress, OUT and ``-o`` checked first) is ``logcorr/console.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

# Polars' jemalloc hands freed pages back to the kernel within a second by default; an ingest
# allocates and frees chunk-sized buffers all the time, and faulting those pages in again cost
# ~2 s of system time per million entries. Keep them five seconds. Read once, when polars loads.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:5000,muzzy_decay_ms:5000")

import typer  # noqa: E402

from logcorr.console import (  # noqa: E402
    Command,
    Group,
    Progress,
    checked_out,
    fail,
    output_file,
    readable,
    repoint,
    writes,
)
from logcorr.inputs.source import ReadOptions  # noqa: E402
from logcorr.interrupts import is_interrupt  # noqa: E402
from logcorr.render.terminal import clean, for_terminal, json_inert, shown_name  # noqa: E402

app = typer.Typer(
    cls=Group,
    help="Offline log and trace correlation for SGLang prefill-decode incidents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: flags without a <bool> metavar
    context_settings={"help_option_names": ["-h", "--help"]},
)

DEFAULT_OUT = Path("logcorr-out")


OutDir = Annotated[
    Path,
    typer.Option(
        "-d",
        "--dir",
        help="The ingest output folder (OUT).",
        metavar="OUT",
        callback=checked_out,
        readable=False,  # checked by the callback: exit 1 and one line, not a usage error
    ),
]
# the window and role options of the renderers (timeline, export)
Since = Annotated[
    str | None, typer.Option(help="From this time (ISO 8601, UTC; or HH:MM[:SS]).", metavar="TIME")
]
Until = Annotated[
    str | None, typer.Option(help="Until this time (ISO 8601, UTC; or HH:MM[:SS]).", metavar="TIME")
]
LaneRole = Annotated[
    str | None, typer.Option(help="Only the lanes of prefill, decode or router.", metavar="ROLE")
]


def _version(value: bool) -> None:
    if value:
        import logcorr

        typer.echo(f"logcorr {logcorr.__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Offline log and trace correlation for SGLang prefill-decode incidents."""


EMBED_HELP = (
    "Copy the tables into OUT/logcorr.duckdb, so the file opens alone (mailed without the folder)."
    " --no-embed (the default): views over OUT's Parquet files, opened from inside any copy of OUT:"
    " cd OUT && duckdb logcorr.duckdb."
)
Embed = Annotated[bool, typer.Option("--embed/--no-embed", help=EMBED_HELP)]
# ingest's inputs and options
InputPaths = Annotated[
    list[Path],
    # readable=False: an unreadable input is reported by ingest while the others are still read
    typer.Argument(
        help="Journal dirs, .journal files, captures, logs, dumps, or folders of them.",
        readable=False,
        metavar="PATH",
    ),
]
IngestOut = Annotated[
    Path,
    typer.Option(
        "-d",
        "--dir",
        "-o",
        "--out",
        help="Output folder for the tables (OUT).",
        metavar="OUT",
        readable=False,
    ),
]
Units = Annotated[
    list[str], typer.Option("--unit", "-u", help="Read only this systemd unit (repeatable).", metavar="UNIT")
]
KeepSince = Annotated[
    str | None,
    typer.Option(
        help="Keep records from this time on: ISO 8601, UTC unless it carries an offset, for every input "
        "('2025-10-29 21:30'); journalctl's own forms ('-1h', 'yesterday') for journals.",
        metavar="TIME",
    ),
]
KeepUntil = Annotated[
    str | None, typer.Option(help="Keep records up to this time (as --since).", metavar="TIME")
]
Roles = Annotated[
    list[str],
    typer.Option(
        help="UNIT=ROLE (prefill, decode, router, engine) when names do not say (repeatable).",
        metavar="UNIT=ROLE",
    ),
]
CapturedAt = Annotated[
    str | None,
    typer.Option(
        help="When bare py-spy dump files (and a Prometheus scrape saved without a time) were taken ('2025-10-29 21:40:10', UTC).",
        metavar="TIME",
    ),
]
Origin = Annotated[
    str | None,
    typer.Option(
        help="Partition name of this ingest (default: the host its data names, journald's _HOSTNAME); see docs/many_hosts.md.",
        metavar="NAME",
    ),
]


@app.command(cls=Command)
def ingest(
    paths: InputPaths,
    out: IngestOut = DEFAULT_OUT,
    unit: Units = [],  # noqa: B006
    since: KeepSince = None,
    until: KeepUntil = None,
    all_units: Annotated[
        bool, typer.Option("--all-units", help="Read every journal entry, any unit.")
    ] = False,
    role: Roles = [],  # noqa: B006
    append: Annotated[
        bool, typer.Option(help="Add to the tables already in OUT instead of replacing them.")
    ] = False,
    captured_at: CapturedAt = None,
    origin: Origin = None,
    embed: Embed = False,
) -> None:
    """Read journals, captures, logs and py-spy dumps into Parquet tables under OUT.

    Exit status: 0 written; 3 written, but an input could not be read at all (missing, permission denied, refused by journalctl) or only in part (journalctl killed, a reader failing part way); 1 nothing written (no input readable, a bad option value, OUT not a logcorr folder, damaged, unreadable, held by another run, or not writable); 2 a usage error (unknown option, no input); 130 interrupted (Ctrl-C, SIGTERM, SIGHUP).
    """
    try:  # Ctrl-C while the libraries load (a second or two) is an interrupt like any other
        from logcorr.ingest import ingest as run
        from logcorr.pipeline.notes import format_summary, said_after
        from logcorr.pipeline.plan import parse_roles
    except KeyboardInterrupt:
        fail(f"interrupted; {out} left as it was", 130)

    readable(out)
    with _ingest_errors(out):
        roles = parse_roles(role)  # a bad value exits 1, as --help says (2 is a usage error)
        opts = ReadOptions(units=tuple(unit), since=since, until=until, all_units=all_units, roles=roles)
        progress = Progress()
        try:
            result = run(
                paths,
                out,
                opts,
                progress=progress,
                append=append,
                captured_at=captured_at,
                origin=origin,
                embed=embed,
            )
        finally:
            progress.done()  # the progress line is cleared before any message or the summary
    typer.echo(clean(format_summary(result)))
    lines, failure = said_after(result, out)
    for line in lines:  # on stderr too, where a script looks
        typer.echo(clean(f"logcorr: {line}"), err=True)
    if failure:  # OUT written, but an input not read whole: say so, and let a script see it
        fail(failure, 3)


@contextlib.contextmanager
def _ingest_errors(out: Path) -> Iterator[None]:
    """An ingest's failure as one line and an exit code: 1 nothing written (``NothingReadError``,
    ``OutputError``, ``OptionError``, ``DatabaseError``, an ``OSError`` writing the tables), 130
    interrupted (Ctrl-C, or the error DuckDB raises when it cancels its query on one)."""
    from logcorr.analysis.database import DatabaseError
    from logcorr.ingest import NothingReadError, OptionError
    from logcorr.store.output import OutputError

    try:
        yield
    except (NothingReadError, OutputError, OptionError) as e:
        fail(str(e))
    except DatabaseError as e:
        fail(f"{e}; {out} left as it was")
    except OSError as e:  # disk full or read-only while the tables were written
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        fail(f"{out} not written: {where}{e.strerror or e}; {out} left as it was")
    except Exception as e:  # DuckDB cancels its query on Ctrl-C and raises its own error instead
        if not is_interrupt(e):
            raise
        fail(f"interrupted; {out} left as it was", 130)
    except KeyboardInterrupt:
        fail(f"interrupted; {out} left as it was", 130)


@app.command(cls=Command)
def query(
    name_or_sql: Annotated[
        str | None,
        typer.Argument(help="A saved query's name, a .sql file, or SQL in quotes.", metavar="NAME_OR_SQL"),
    ] = None,
    out: OutDir = DEFAULT_OUT,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="table (vertical when wider than the terminal), vertical, csv, json or markdown.",
            metavar="FORMAT",
        ),
    ] = "table",
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Show only the first N rows.", metavar="N")
    ] = None,
    columns: Annotated[
        str | None,
        typer.Option("--columns", "-c", help="Only these columns, comma-separated.", metavar="A,B"),
    ] = None,
    param: Annotated[
        list[str],
        typer.Option(
            "--param", "-p", help="NAME=VALUE for a query parameter (repeatable).", metavar="NAME=VALUE"
        ),
    ] = [],  # noqa: B006
    list_: Annotated[
        bool, typer.Option("--list", help="List the saved queries and their questions.")
    ] = False,
) -> None:
    """Run a saved query (by name) or any SQL on the tables of OUT; --list shows the saved ones."""
    from logcorr.analysis import saved
    from logcorr.store.output import reading

    if list_:
        typer.echo(saved.describe())
        return
    if not name_or_sql:
        fail("give a saved query's name or SQL in quotes; `logcorr query --list` shows the saved queries")
    if fmt not in saved.FORMATS:
        fail(f"--format {fmt!r}: expected one of {', '.join(saved.FORMATS)}")
    repoint(out)
    picked = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    try:
        # streamed, memory bounded whatever the rows; what a program reads (csv, json) is the same JSON
        # with C1 controls and bidi marks escaped, CSV cleaned only on a terminal; the others cleaned
        tty = sys.stdout.isatty()
        inert = json_inert if fmt == "json" else str if fmt == "csv" and not tty else clean
        width = shutil.get_terminal_size().columns if tty else None
        with reading(out):  # no ingest swaps OUT under the query, while it streams
            stream = saved.QueryStream(out, name_or_sql, param, fmt, limit=limit, columns=picked, width=width)
            for piece in stream:
                sys.stdout.write(inert(piece))
        sys.stdout.flush()
        note = stream.note
        if note:
            typer.echo(note, err=True)  # stdout stays valid csv/json
    except (saved.QueryError, FileNotFoundError) as e:
        fail(str(e))


@app.command()
def report(
    out: OutDir = DEFAULT_OUT,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the report here instead of printing it.", metavar="FILE"),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="markdown (the report), json (summary and findings, keys in logcorr/render/report.schema.json)"
            " or issue (a draft upstream bug report in SGLang's template).",
            metavar="FORMAT",
        ),
    ] = "markdown",
    summary_only: Annotated[
        bool,
        typer.Option(
            "--summary", help="Only the report's head and summary (what happened, impact, what to do now)."
        ),
    ] = False,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact/--no-redact",
            help="--format issue: host names, directories, internal URLs' hosts and the model path as"
            " placeholders (host-1, <path>, model-1); --no-redact keeps them.",
        ),
    ] = True,
) -> None:
    """The incident in words and numbers, for a postmortem, drawn from the saved queries: a summary that
    leads, the findings in causal order, the detail; as Markdown, JSON or an upstream-issue draft. On a
    terminal the Markdown is wrapped to its width and shown through a pager ($PAGER, else less)."""
    from logcorr.render.outputs import RenderOptionError, check_report_options, report_text
    from logcorr.render.report import ReportError
    from logcorr.store.output import reading

    try:
        check_report_options(fmt, redact)
    except RenderOptionError as e:
        fail(str(e))
    if output is not None:
        output_file(output)
    repoint(out)
    try:
        with reading(out):  # one OUT from start to end, even while an ingest replaces it
            text = report_text(out, fmt, redact=redact, summary_only=summary_only)
    except (ReportError, FileNotFoundError) as e:
        fail(str(e))
    if output is None and fmt == "markdown" and sys.stdout.isatty():
        import pydoc

        pydoc.pager(for_terminal(text, shutil.get_terminal_size().columns))
    elif output is None:
        typer.echo(text, nl=False)
    else:
        from logcorr.store.output import write_atomic

        try:
            write_atomic(output, lambda f: f.write(text))
        except OSError as e:
            fail(f"{output}: cannot write it: {e.strerror or e}")
        typer.echo(f"wrote {output}")


@app.command()
def timeline(
    out: OutDir = DEFAULT_OUT,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="The file to write: .html or .htm (the page), .png or .svg (a picture); default: timeline.html.",
            metavar="FILE",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="html (the page), png or svg (its first view as a picture); default: from -o's suffix, else html.",
            metavar="FORMAT",
            show_default=False,
        ),
    ] = None,
    since: Since = None,
    until: Until = None,
    room: Annotated[
        int | None, typer.Option(help="Only the marks of this bootstrap_room.", metavar="ROOM")
    ] = None,
    role: LaneRole = None,
    detail: Annotated[
        bool | None,
        typer.Option(
            "--detail/--runs",
            help="A tick per batch line, or runs of batches; default: ticks when the window holds at most 12,000 lines.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Per-rank swimlanes of OUT as one self-contained HTML file (works offline, from file://), or its
    first view as a PNG or SVG picture."""
    from logcorr.render.outputs import RenderOptionError, draw_timeline, file_error, timeline_target
    from logcorr.render.timeline import TimelineError
    from logcorr.store.output import reading

    try:
        fmt, output = timeline_target(output, fmt)
    except RenderOptionError as e:
        fail(str(e))
    writes(output)
    try:
        with reading(out):  # one OUT from start to end, even while an ingest replaces it
            said = draw_timeline(
                out, output, fmt, since=since, until=until, room=room, role=role, detail=detail
            )
    except TimelineError as e:
        fail(str(e))
    except OSError as e:
        fail(file_error(e, out, output))
    typer.echo(said)


@app.command()
def export(
    fmt: Annotated[
        str,
        typer.Option("--format", "-f", help="chrome-trace (Perfetto, chrome://tracing).", metavar="FORMAT"),
    ] = "chrome-trace",
    out: OutDir = DEFAULT_OUT,
    output: Annotated[Path, typer.Option("-o", "--output", help="The file to write.", metavar="FILE")] = Path(
        "trace.json"
    ),
    since: Since = None,
    until: Until = None,
    role: LaneRole = None,
    detail: Annotated[
        bool | None,
        typer.Option(
            "--detail/--runs",
            help="One slice per batch line, or per run of batches; default: per line when the window "
            "holds at most 100,000 lines.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The timeline's lanes as a trace for Perfetto (ui.perfetto.dev) or chrome://tracing."""
    if fmt != "chrome-trace":
        fail(f"--format {fmt!r}: the only format is chrome-trace")
    from logcorr.render.outputs import file_error, trace_written
    from logcorr.render.timeline import TimelineError
    from logcorr.render.trace import export_chrome_trace
    from logcorr.store.output import reading

    output_file(output)
    try:
        with reading(out):  # one OUT from start to end, even while an ingest replaces it
            counts = export_chrome_trace(out, output, since=since, until=until, role=role, detail=detail)
    except TimelineError as e:
        fail(str(e))
    except OSError as e:
        fail(file_error(e, out, output))
    typer.echo(trace_written(output, counts))


@app.command(cls=Command)
def combine(
    outs: Annotated[
        list[Path],
        typer.Argument(help="The OUT of each host's ingest (two or more).", metavar="OUT", readable=False),
    ],
    dest: Annotated[
        Path,
        typer.Option(
            "-o", "--out", help="The combined folder (ALL): new, or one combine wrote before.", metavar="ALL"
        ),
    ],
    embed: Embed = False,
) -> None:
    """Combine several hosts' OUTs into one folder, each table one Parquet file (docs/many_hosts.md).

    Exit status: 0 written; 1 nothing written (an OUT missing, damaged or no logcorr output, one host
    ingested twice, ALL not a folder combine wrote, a write failed); 130 interrupted.
    """
    from logcorr.combine import CombineError
    from logcorr.combine import combine as run
    from logcorr.store.output import OutputError

    for out in outs:
        readable(out)
    try:
        result = run(outs, dest, embed=embed)
    except (CombineError, OutputError) as e:
        fail(shown_name(str(e)))  # one line: a newline in a folder's name is shown, never a line of its own
    counts = ", ".join(f"{t} {n:,}" for t, n in result.rows.items())
    typer.echo(
        shown_name(
            f"wrote {result.path}: {len(result.outs)} OUTs, {result.parts_read:,} part files read into one per "
            f"table ({result.seconds:.1f} s): {counts}"
        )
    )


@app.command()
def database(
    out: OutDir = DEFAULT_OUT,
    embed: Embed = False,
) -> None:
    """Rebuild OUT/logcorr.duckdb and OUT/views.sql: --embed copies the tables in (one file that opens
    alone, to mail), --no-embed (the default) writes views over OUT's Parquet files."""
    from logcorr.analysis import database as db
    from logcorr.store.output import OutputError

    writes(Path(out) / db.DB_NAME)
    try:
        result = db.write(out, embed=embed)
    except (db.DatabaseError, OutputError, FileNotFoundError) as e:
        fail(str(e))
    how = "tables copied in" if embed else f"views over the Parquet files of {Path(out).resolve()}"
    counts = ", ".join(f"{t} {n:,}" for t, n in result.tables.items())
    typer.echo(f"wrote {result.path} ({how}; {result.path.stat().st_size / 1e6:.1f} MB): {counts}")


@app.command(cls=Command)
def show(
    event_id: Annotated[
        int, typer.Argument(help="The event_id of a record (every table has one).", metavar="EVENT_ID")
    ],
    out: OutDir = DEFAULT_OUT,
    context: Annotated[
        int,
        typer.Option("-C", "--context", help="Records before and after it (as grep -C).", metavar="N", min=0),
    ] = 3,
    old_context: Annotated[int | None, typer.Option("-n", hidden=True, min=0)] = None,
) -> None:
    """A record with its neighbours in the same process stream, and the command that opens it at its source."""
    from logcorr.render.show import ShowError
    from logcorr.render.show import show as show_record
    from logcorr.store.output import reading

    if old_context is not None:  # -n was --context before it meant --limit everywhere else
        typer.echo("logcorr show: -n is now -C (--context, as grep's); -n will go", err=True)
        context = old_context
    try:
        with reading(out):
            text = show_record(out, event_id, context)
        typer.echo(clean(text))
    except (ShowError, FileNotFoundError) as e:
        fail(str(e))


@app.command()
def collect(
    out: Annotated[
        Path | None,
        typer.Option(
            "-o", "--out", help="The bundle folder to write (default: bundle-HOST).", metavar="BUNDLE"
        ),
    ] = None,
    since: Annotated[
        str, typer.Option(help="The journal window, back from now (30m, 2h).", metavar="SPAN")
    ] = "30m",
    url: Annotated[
        list[str],
        typer.Option(
            help="An engine's or the router's base URL (repeatable; default: loopback, the ports the processes listen on).",
            metavar="URL",
        ),
    ] = [],  # noqa: B006
    rounds: Annotated[int, typer.Option(help="py-spy rounds of every scheduler.", metavar="N")] = 2,
    interval: Annotated[str, typer.Option(help="Time between the rounds.", metavar="SPAN")] = "5s",
    budget: Annotated[str, typer.Option(help="The whole run's bound.", metavar="SPAN")] = "120s",
    timeout: Annotated[str, typer.Option(help="Each endpoint's timeout.", metavar="SPAN")] = "5s",
    native: Annotated[
        bool, typer.Option("--native", help="py-spy dump --native (C/C++ frames; slower).")
    ] = False,
    journal_dir: Annotated[
        Path | None,
        typer.Option(
            help="Read this journal folder instead of the system journal (journalctl -D).", metavar="DIR"
        ),
    ] = None,
    py_spy: Annotated[
        str, typer.Option("--py-spy", help="The py-spy executable.", metavar="PATH")
    ] = "py-spy",
    archive: Annotated[bool, typer.Option("--archive", help="Also write BUNDLE.tar.gz.")] = False,
) -> None:
    """Take this host's evidence of a wedge into a bundle before the restart: py-spy dumps of every scheduler (two rounds), the journal of their units, the endpoints' answers, GPU and kernel state.

    Only reads: no signal is sent to any serving process; py-spy dump pauses each scheduler for the moment of its dump (milliseconds). Read the bundle with logcorr ingest BUNDLE. Exit status: 0 written (failed steps are in the manifest); 1 a bad option value or BUNDLE not empty.
    """
    import socket

    from logcorr.collect import CollectError, summary
    from logcorr.collect import collect as run

    bundle = out or Path(f"bundle-{socket.gethostname()}")
    try:
        manifest = run(
            bundle, since=since, urls=url, rounds=rounds, interval=interval, budget=budget, timeout=timeout,
            native=native, journal_dir=journal_dir, pyspy=py_spy, archive=archive,
        )  # fmt: skip
    except CollectError as e:
        fail(str(e))
    typer.echo(clean(summary(bundle, manifest)))


@app.command(cls=Command)
def tables(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Tables to show (all when none given).", show_default=False, metavar="NAME"),
    ] = None,
) -> None:
    """Print the table contract: each table's row, key, columns, types and meaning (Markdown)."""
    from logcorr.store import schema

    unknown = [n for n in names or [] if n not in schema.TABLES]
    if unknown:
        fail(f"no table named {', '.join(unknown)}; the tables: {', '.join(schema.TABLES)}", 2)
    typer.echo(schema.describe(names or None))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
