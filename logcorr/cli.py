"""The ``logcorr`` command: parses options, calls the library, prints. Nothing below imports typer."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

# Polars' jemalloc hands freed pages back to the kernel within a second by default; an ingest
# allocates and frees chunk-sized buffers all the time, and faulting those pages in again cost
# ~2 s of system time per million entries. Keep them five seconds. Read once, when polars loads.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:5000,muzzy_decay_ms:5000")

import typer  # noqa: E402
from typer.core import TyperArgument, TyperCommand, TyperGroup  # noqa: E402

from logcorr.inputs.source import ReadOptions  # noqa: E402
from logcorr.interrupts import interrupt_queries, is_interrupt  # noqa: E402
from logcorr.render.terminal import clean, for_terminal, json_inert  # noqa: E402
from logcorr.store.schema import ROLES  # noqa: E402


def _interrupt(signum, frame) -> None:
    interrupt_queries()  # DuckDB's own reaction to the signal is not reliable (interrupts.interrupt_queries)
    raise KeyboardInterrupt


# Ctrl-C, SIGTERM (a timeout, systemd stopping a job) and SIGHUP (the terminal closed): one handler
TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_writing: list[object] = []  # the file the running command replaces (``_writes``), for the interrupt's line


def _writes(target: object) -> None:
    """Note the file the running command writes (atomically), for the interrupt's line to name."""
    _writing[:] = [target]


class _Group(TyperGroup):
    """The ``logcorr`` group: one rule for an interrupt in every command. Ctrl-C, SIGTERM and SIGHUP
    unwind the same way (``KeyboardInterrupt``: temporary files are removed on the way out), and the
    command ends with one line on stderr and exit status 130, whichever layer the interrupt surfaced in
    (``interrupts.is_interrupt``: DuckDB cancels its query and raises its own exception). Without this,
    typer ends a ``KeyboardInterrupt`` silently (0.29) or with 'Aborted!' and 1 (older releases), and
    SIGTERM kills the process with its temporary files left."""

    def invoke(self, ctx):
        # (a handler can be set in the main thread only: the app called from another, as a test may, keeps them)
        main = threading.current_thread() is threading.main_thread()
        previous = {s: signal.signal(s, _interrupt) for s in TERMINATING} if main else {}
        _writing.clear()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _interrupted()
        except Exception as e:
            if is_interrupt(e):
                _interrupted()
            if said := _unreadable_table(e):
                _fail(
                    f"OUT's tables cannot be read ({said}): a damaged file? ingest the inputs again into a new folder"
                )
            raise
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _unreadable_table(error: Exception) -> str | None:
    """The first line of a DuckDB or polars error that reading a damaged Parquet part raises (damaged
    inside, past the ends ``check_intact`` reads: DuckDB's IO, invalid input or bare ``Error`` such as
    'Out of buffer'; any error naming Parquet), else None: a query's own mistakes are other types."""
    said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    library = type(error).__module__.lstrip("_").split(".")[0]
    reading = type(error).__name__ in ("Error", "IOException", "InvalidInputException")
    if library == "duckdb" and reading or library in ("duckdb", "polars") and "parquet" in said.lower():
        return said
    return None


def _interrupted() -> None:
    _fail(f"interrupted; {_writing[0]} left as it was" if _writing else "interrupted", 130)


app = typer.Typer(
    cls=_Group,
    help="Offline log and trace correlation for SGLang prefill-decode incidents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: flags without a <bool> metavar
    context_settings={"help_option_names": ["-h", "--help"]},
)

DEFAULT_OUT = Path("logcorr-out")


class _PlainArgument(TyperArgument):
    """An argument shown in help by its name alone, as click shows one (``PATH...``, ``[NAME_OR_SQL]``),
    not with typer's braces and Python type (``{PATH}...``, ``PATH <list[Path]>``, ``<int>``)."""

    def shown(self) -> str:
        name = self.metavar or (self.name or "").upper()
        return f"{name}..." if self.nargs != 1 else name

    def display_type_rich(self, ctx) -> None:
        return None

    def get_usage_pieces(self, ctx) -> list[str]:
        return [self.shown() if self.required else f"[{self.shown()}]"]

    def get_help_record(self, ctx) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        return record and (self.shown(), record[1])


class _Command(TyperCommand):
    """A command whose arguments are ``_PlainArgument``s (give it as ``@app.command(cls=_Command)``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument):
                param.__class__ = _PlainArgument


def _readable(out: Path) -> None:
    """Fail (one line, exit 1, as docs/reliability.md says) when OUT exists but this user cannot read
    it; typer's own check (``readable``, off on every OUT option) would answer with a usage error."""
    if out.is_dir() and not os.access(out, os.R_OK | os.X_OK):  # (a file is refused as no folder later)
        _fail(
            f"{out}: permission denied: this user cannot read OUT (run as its owner, or give another folder)"
        )


def _one_ingest_per_origin(out: Path) -> Path:
    """``-d OUT``'s check, before any command reads it: an OUT this user cannot read is refused (exit
    1); a folder combined from two separate ingests of one origin is refused (exit 1, naming both
    parts), not read with every record twice."""
    from logcorr.analysis.database import DatabaseError, refuse_two_ingests_of_one_origin
    from logcorr.store.output import OutputError, check_intact, reading, stable_out

    _readable(out)
    try:
        check_intact(stable_out(out))
        with reading(out):
            refuse_two_ingests_of_one_origin(out)
    except (DatabaseError, OutputError) as e:
        _fail(str(e))
    return out


OutDir = Annotated[
    Path,
    typer.Option(
        "-d",
        "--dir",
        help="The ingest output folder (OUT).",
        metavar="OUT",
        callback=_one_ingest_per_origin,
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


def _fail(message: str, code: int = 1) -> None:
    typer.echo(clean(f"logcorr: {message}"), err=True)
    raise typer.Exit(code)


def _parse_roles(pairs: list[str]) -> dict[str, str]:
    roles = {}
    for pair in pairs:
        unit, sep, role = pair.partition("=")
        if not sep or role not in ROLES:
            # a bad option value exits 1, as --help says (2 is a usage error: unknown option, no input)
            _fail(f"--role {pair!r}: expected UNIT=ROLE with ROLE one of {', '.join(ROLES)}", 1)
        roles[unit] = role
    return roles


EMBED_HELP = (
    "Copy the tables into OUT/logcorr.duckdb, so the file opens alone (mailed without the folder)."
    " --no-embed (the default): views over OUT's Parquet files, opened from inside any copy of OUT:"
    " cd OUT && duckdb logcorr.duckdb."
)


@app.command(cls=_Command)
def ingest(
    paths: Annotated[
        list[Path],
        # readable=False: an unreadable input is reported by ingest while the others are still read
        typer.Argument(
            help="Journal dirs, .journal files, captures, logs, dumps, or folders of them.",
            readable=False,
            metavar="PATH",
        ),
    ],
    out: Annotated[
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
    ] = DEFAULT_OUT,
    unit: Annotated[
        list[str],
        typer.Option("--unit", "-u", help="Read only this systemd unit (repeatable).", metavar="UNIT"),
    ] = [],  # noqa: B006
    since: Annotated[
        str | None,
        typer.Option(
            help="Keep records from this time on: ISO 8601, UTC unless it carries an offset, for every input "
            "('2025-10-29 21:30'); journalctl's own forms ('-1h', 'yesterday') for journals.",
            metavar="TIME",
        ),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Keep records up to this time (as --since).", metavar="TIME")
    ] = None,
    all_units: Annotated[
        bool, typer.Option("--all-units", help="Read every journal entry, any unit.")
    ] = False,
    role: Annotated[
        list[str],
        typer.Option(
            help="UNIT=ROLE (prefill, decode, router, engine) when names do not say (repeatable).",
            metavar="UNIT=ROLE",
        ),
    ] = [],  # noqa: B006
    append: Annotated[
        bool, typer.Option(help="Add to the tables already in OUT instead of replacing them.")
    ] = False,
    captured_at: Annotated[
        str | None,
        typer.Option(
            help="When bare py-spy dump files (and a Prometheus scrape saved without a time) were taken ('2025-10-29 21:40:10', UTC).",
            metavar="TIME",
        ),
    ] = None,
    origin: Annotated[
        str | None,
        typer.Option(
            help="Partition name of this ingest (default: the host its data names, journald's _HOSTNAME); see docs/many_hosts.md.",
            metavar="NAME",
        ),
    ] = None,
    embed: Annotated[bool, typer.Option("--embed/--no-embed", help=EMBED_HELP)] = False,
) -> None:
    """Read journals, captures, logs and py-spy dumps into Parquet tables under OUT.

    Exit status: 0 written; 3 written, but an input could not be read at all (missing, permission denied, refused by journalctl) or only in part (journalctl killed, a reader failing part way); 1 nothing written (no input readable, a bad option value, OUT not a logcorr folder, damaged, unreadable, held by another run, or not writable); 2 a usage error (unknown option, no input); 130 interrupted (Ctrl-C, SIGTERM, SIGHUP).
    """
    try:  # Ctrl-C while the libraries load (a second or two) is an interrupt like any other
        from logcorr.analysis.database import DatabaseError
        from logcorr.ingest import NothingReadError, OptionError
        from logcorr.ingest import ingest as run
        from logcorr.store.output import OutputError
    except KeyboardInterrupt:
        _fail(f"interrupted; {out} left as it was", 130)

    _readable(out)
    opts = ReadOptions(
        units=tuple(unit), since=since, until=until, all_units=all_units, roles=_parse_roles(role)
    )
    progress = Progress()
    try:
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
    except (NothingReadError, OutputError, OptionError) as e:
        _fail(str(e))
    except DatabaseError as e:
        _fail(f"{e}; {out} left as it was")
    except OSError as e:  # disk full or read-only while the tables were written
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        _fail(f"{out} not written: {where}{e.strerror or e}; {out} left as it was")
    except Exception as e:  # DuckDB cancels its query on Ctrl-C and raises its own error instead
        if not is_interrupt(e):
            raise
        _fail(f"interrupted; {out} left as it was", 130)
    except KeyboardInterrupt:
        _fail(f"interrupted; {out} left as it was", 130)
    typer.echo(clean(format_summary(result)))
    for warning in result.warnings:  # an option that did nothing: said where a script's log keeps it
        typer.echo(clean(f"logcorr: warning: {warning}"), err=True)
    for r in result.reports:  # on stderr too, where a script looks: each input not read whole and why
        if r.unread or r.incomplete:
            for e in r.errors[:3]:
                typer.echo(clean(f"logcorr: error: {e}"), err=True)
    unread = [r.source for r in result.reports if r.unread]
    if unread:  # the others were read and written: say so, but let a script see it
        _fail(f"{out} written, but {len(unread)} input(s) could not be read at all: {', '.join(unread)}", 3)
    partial = [r.source for r in result.reports if r.incomplete]
    if partial:  # a journalctl killed part way, a corrupt journal: what came is in OUT, the rest is not
        _fail(f"{out} written, but {len(partial)} input(s) were read only in part: {', '.join(partial)}", 3)


def _repoint(out: Path) -> None:
    """Re-point ``OUT/logcorr.duckdb`` when OUT was copied or moved since it was written (its views
    would read the original's files, or none), saying so on stderr; queries themselves never read it."""
    from logcorr.analysis import database as db

    old = db.points_elsewhere(out)
    if old is None:
        return
    try:
        db.write(out, embed=False)
        typer.echo(
            f"logcorr: re-pointed {out}/logcorr.duckdb at {out} (it read the tables of {old})", err=True
        )
    except Exception as e:  # noqa: BLE001 — a read-only copy still answers queries; say what to do
        if is_interrupt(e):
            raise
        typer.echo(
            f"logcorr: {out}/logcorr.duckdb reads {old}; run logcorr database -d {out} ({e})", err=True
        )


def _file_error(e: OSError, out: Path, output: Path) -> str:
    """The one line for an ``OSError`` of a command that reads OUT and writes ``output``: the output
    file's error when the error is about it (it names that file or its temporary sibling, or none, as
    a write on an open file does), else OUT's (a part file gone or unreadable: polars names the file
    in its message only, with no errno)."""
    named = Path(e.filename) if e.filename else None
    ours = (
        named is not None
        and named.parent == output.parent
        and named.name.startswith((output.name, f".{output.name}."))
    )
    if ours or (named is None and e.errno is not None):
        return f"{output}: cannot write it: {e.strerror or e}"
    return f"{out}: cannot read it: {e.strerror or e}"


def _check_output_file(path: Path) -> None:
    """Fail with a message (not a traceback) when ``-o`` cannot name a file to write."""
    if path.is_dir():
        _fail(f"{path}: is a folder; -o names the file to write (-d names the ingest output folder)")
    if path.parent.is_file():
        _fail(f"{path.parent}: is a file, not a folder to write {path.name} in")
    if not path.parent.is_dir():
        _fail(f"{path.parent}: no such folder to write {path.name} in")


class Progress:
    """Progress lines on stderr: rewritten in place on a terminal; in a log file or a pipe at most
    one every ``every`` seconds, so a day's ingest leaves a handful of lines, not hundreds."""

    def __init__(self, every: float = 10.0) -> None:
        self.tty = sys.stderr.isatty()
        self.every = every
        self.last = time.monotonic()
        self.shown = False

    def __call__(self, text: str) -> None:
        if self.tty:  # cut to the terminal's width: a wrapped line is not rewritten in place
            width = shutil.get_terminal_size().columns - 5
            sys.stderr.write(f"\r\x1b[K  … {text if len(text) <= width else text[: width - 1] + '…'}")
            sys.stderr.flush()
            self.shown = True
        elif time.monotonic() - self.last >= self.every:
            self.last = time.monotonic()
            typer.echo(clean(f"  … {text}"), err=True)

    def done(self) -> None:
        if self.tty and self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def format_summary(result) -> str:
    """The text ``logcorr ingest`` prints: inputs, records per role and kind, span, skips, speed."""
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
            "UTC" if not loose else "as printed, zone not printed" if not zoned
            else f"UTC for {zoned:,} record(s), {loose:,} more printed without a zone, as printed"
        )  # fmt: skip
        lines.append(
            f"time span: {result.first_ts:%Y-%m-%d %H:%M:%S} .. {result.last_ts:%Y-%m-%d %H:%M:%S} ({clock})"
        )
    lines.append("tables: " + ", ".join(f"{t} {n:,}" for t, n in result.rows.items()))
    rate = result.lines / result.seconds if result.seconds else 0
    lines.append(
        f"wrote {result.out} in {result.seconds:.1f} s ({result.lines:,} lines, {rate:,.0f} lines/s)"
    )
    return "\n".join(lines)


@app.command(cls=_Command)
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
        _fail("give a saved query's name or SQL in quotes; `logcorr query --list` shows the saved queries")
    if fmt not in saved.FORMATS:
        _fail(f"--format {fmt!r}: expected one of {', '.join(saved.FORMATS)}")
    _repoint(out)
    picked = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    try:
        if fmt in saved.STREAMED:  # what a program reads: streamed, memory bounded whatever the rows
            # the same JSON with C1 controls and bidi marks escaped; CSV cleaned only on a terminal
            inert = json_inert if fmt == "json" else clean if sys.stdout.isatty() else str
            with reading(out):  # no ingest swaps OUT under the query, while it streams
                stream = saved.QueryStream(out, name_or_sql, param, fmt, limit=limit, columns=picked)
                for piece in stream:
                    sys.stdout.write(inert(piece))
            sys.stdout.flush()
            note = stream.note
        else:
            width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
            with reading(out):  # no ingest swaps OUT under the query
                text, note = saved.render_query(
                    out, name_or_sql, param, fmt, limit=limit, columns=picked, width=width
                )
            typer.echo(clean(text))
        if note:
            typer.echo(note, err=True)  # stdout stays valid csv/json
    except (saved.QueryError, FileNotFoundError) as e:
        _fail(str(e))


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
    import json

    from logcorr.render import issue
    from logcorr.render import report as report_mod
    from logcorr.store.output import reading

    if fmt not in ("markdown", "json", "issue"):
        _fail(f"--format {fmt!r}: expected markdown, json or issue")
    if not redact and fmt != "issue":
        _fail(f"--no-redact: only --format issue redacts; --format {fmt} keeps the data as it is")
    if output is not None:
        _check_output_file(output)
        _writes(output)
    _repoint(out)
    try:
        with reading(out):  # one OUT from start to end, even while an ingest replaces it
            if fmt == "json":
                text = (
                    json_inert(json.dumps(report_mod.report_data(out), indent=1, ensure_ascii=False)) + "\n"
                )
            elif fmt == "issue":
                text = clean(issue.issue(out, redact=redact))
            else:
                text = clean(report_mod.report(out))  # a terminal and a Markdown file alike
    except (report_mod.ReportError, FileNotFoundError) as e:
        _fail(str(e))
    if summary_only and fmt == "markdown":
        text = text.split("\n## ", 2)
        text = text[0] + "\n## " + text[1].rstrip("\n") + "\n" if len(text) > 1 else text[0]
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
            _fail(f"{output}: cannot write it: {e.strerror or e}")
        typer.echo(f"wrote {output}")


TIMELINE_SUFFIXES = {"html": (".html", ".htm"), "png": (".png",), "svg": (".svg",)}  # -o's, per --format
SUFFIX_OF = {s: f for f, names in TIMELINE_SUFFIXES.items() for s in names}


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
    from logcorr.render.timeline import TimelineError, image
    from logcorr.render.timeline import timeline as draw
    from logcorr.store.output import reading

    suffix = output.suffix.lower() if output else ""
    fmt = (fmt or SUFFIX_OF.get(suffix, "html")).lower()
    if fmt not in TIMELINE_SUFFIXES:
        _fail(f"--format {fmt}: one of html, png, svg")
    output = output or Path(f"timeline.{fmt}")
    _check_output_file(output)
    _writes(output)
    if output.suffix.lower() not in TIMELINE_SUFFIXES[fmt]:  # HTML in x.jpg opens as a broken picture
        clash = (
            f"; --format {fmt} writes a {' or '.join(TIMELINE_SUFFIXES[fmt])} file"
            if suffix in SUFFIX_OF
            else ""
        )
        _fail(
            f"{output}: -o names a .html or .htm file (the page), or a .png or .svg file (its first view as"
            f" a picture){clash}"
        )
    try:
        with reading(out):  # one OUT from start to end, even while an ingest replaces it
            if fmt == "html":
                info = draw(out, output, since=since, until=until, room=room, role=role, detail=detail)
            else:
                info = image(out, output, fmt, since=since, until=until, room=room, role=role, detail=detail)
    except TimelineError as e:
        _fail(str(e))
    except OSError as e:
        _fail(_file_error(e, out, output))
    binned = (
        f", {info.counts['batches']:,} batches drawn as {info.counts['runs']:,} runs" if info.binned else ""
    )
    typer.echo(f"wrote {info.html} ({info.bytes / 1e6:.1f} MB, {len(info.lanes)} lanes{binned})")


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
        _fail(f"--format {fmt!r}: the only format is chrome-trace")
    from logcorr.render.timeline import TimelineError
    from logcorr.render.trace import export_chrome_trace
    from logcorr.store.output import reading

    _check_output_file(output)
    _writes(output)
    try:
        with reading(out):  # one OUT from start to end, even while an ingest replaces it
            counts = export_chrome_trace(out, output, since=since, until=until, role=role, detail=detail)
    except TimelineError as e:
        _fail(str(e))
    except OSError as e:
        _fail(_file_error(e, out, output))
    typer.echo(
        f"wrote {output} ({counts['bytes'] / 1e6:.1f} MB: {counts['processes']} processes, {counts['threads']} threads, "
        + (f"{counts['batches']:,} batches" if counts["detail"] else f"{counts['runs']:,} runs of batches")
        + f", {counts['counters']:,} counter points, {counts['instants']:,} instant events); open it in ui.perfetto.dev"
    )


@app.command(cls=_Command)
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
    embed: Annotated[bool, typer.Option("--embed/--no-embed", help=EMBED_HELP)] = False,
) -> None:
    """Combine several hosts' OUTs into one folder, each table one Parquet file (docs/many_hosts.md).

    Exit status: 0 written; 1 nothing written (an OUT missing, damaged or no logcorr output, one host
    ingested twice, ALL not a folder combine wrote, a write failed); 130 interrupted.
    """
    from logcorr.combine import CombineError
    from logcorr.combine import combine as run
    from logcorr.store.output import OutputError

    for out in outs:
        _readable(out)
    try:
        result = run(outs, dest, embed=embed)
    except (CombineError, OutputError) as e:
        _fail(str(e))
    counts = ", ".join(f"{t} {n:,}" for t, n in result.rows.items())
    typer.echo(
        f"wrote {result.path}: {len(result.outs)} OUTs, {result.parts_read:,} part files read into one per table "
        f"({result.seconds:.1f} s): {counts}"
    )


@app.command()
def database(
    out: OutDir = DEFAULT_OUT,
    embed: Annotated[bool, typer.Option("--embed/--no-embed", help=EMBED_HELP)] = False,
) -> None:
    """Rebuild OUT/logcorr.duckdb and OUT/views.sql: --embed copies the tables in (one file that opens
    alone, to mail), --no-embed (the default) writes views over OUT's Parquet files."""
    from logcorr.analysis import database as db
    from logcorr.store.output import OutputError

    _writes(Path(out) / db.DB_NAME)
    try:
        result = db.write(out, embed=embed)
    except (db.DatabaseError, OutputError, FileNotFoundError) as e:
        _fail(str(e))
    how = "tables copied in" if embed else f"views over the Parquet files of {Path(out).resolve()}"
    counts = ", ".join(f"{t} {n:,}" for t, n in result.tables.items())
    typer.echo(f"wrote {result.path} ({how}; {result.path.stat().st_size / 1e6:.1f} MB): {counts}")


@app.command(cls=_Command)
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
        _fail(str(e))


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
        _fail(str(e))
    typer.echo(clean(summary(bundle, manifest)))


@app.command(cls=_Command)
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
        _fail(f"no table named {', '.join(unknown)}; the tables: {', '.join(schema.TABLES)}", 2)
    typer.echo(schema.describe(names or None))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
