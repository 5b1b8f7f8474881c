"""What the rendering commands decide before and after they render: the file ``-o`` names checked
before any work (``check_output_file``), the timeline's format and file (``timeline_target``), the
report in the format asked (``report_text``), the timeline drawn in its format (``draw_timeline``),
the line that says what was written (``trace_written``), and an ``OSError`` worded as the output
file's or OUT's (``file_error``). Errors are ``RenderOptionError``, whose message is the line to print
(``logcorr/cli.py`` prints it and exits 1)."""

from __future__ import annotations

import json
from pathlib import Path

from logcorr.render.terminal import clean, json_inert

REPORT_FORMATS = ("markdown", "json", "issue")
TIMELINE_SUFFIXES = {"html": (".html", ".htm"), "png": (".png",), "svg": (".svg",)}  # -o's, per --format
SUFFIX_OF = {s: f for f, names in TIMELINE_SUFFIXES.items() for s in names}


class RenderOptionError(ValueError):
    """An option of a rendering command cannot be used (a format, the file ``-o`` names); the message
    names it and what would do."""


def check_output_file(path: Path) -> None:
    """Raise ``RenderOptionError`` when ``path`` (``-o``) cannot name a file to write: it is a folder,
    or its folder is a file or does not exist."""
    if path.is_dir():
        raise RenderOptionError(
            f"{path}: is a folder; -o names the file to write (-d names the ingest output folder)"
        )
    if path.parent.is_file():
        raise RenderOptionError(f"{path.parent}: is a file, not a folder to write {path.name} in")
    if not path.parent.is_dir():
        raise RenderOptionError(f"{path.parent}: no such folder to write {path.name} in")


def timeline_target(output: Path | None, fmt: str | None) -> tuple[str, Path]:
    """The timeline's format (``html``, ``png`` or ``svg``: ``fmt``, else from ``output``'s suffix, else
    html) and the file to write (``output``, else ``timeline.<format>``), checked
    (``check_output_file``). Raises ``RenderOptionError`` for another format, or a file whose suffix is
    not the format's (HTML in ``x.jpg`` opens as a broken picture)."""
    suffix = output.suffix.lower() if output else ""
    fmt = (fmt or SUFFIX_OF.get(suffix, "html")).lower()
    if fmt not in TIMELINE_SUFFIXES:
        raise RenderOptionError(f"--format {fmt}: one of html, png, svg")
    output = output or Path(f"timeline.{fmt}")
    check_output_file(output)
    if output.suffix.lower() not in TIMELINE_SUFFIXES[fmt]:
        clash = (
            f"; --format {fmt} writes a {' or '.join(TIMELINE_SUFFIXES[fmt])} file"
            if suffix in SUFFIX_OF
            else ""
        )
        raise RenderOptionError(
            f"{output}: -o names a .html or .htm file (the page), or a .png or .svg file (its first view as"
            f" a picture){clash}"
        )
    return fmt, output


def check_report_options(fmt: str, redact: bool) -> None:
    """Raise ``RenderOptionError`` for a report ``fmt`` not in ``REPORT_FORMATS``, or ``redact`` off
    (``--no-redact``) for a format that does not redact (only ``issue`` does)."""
    if fmt not in REPORT_FORMATS:
        raise RenderOptionError(f"--format {fmt!r}: expected markdown, json or issue")
    if not redact and fmt != "issue":
        raise RenderOptionError(
            f"--no-redact: only --format issue redacts; --format {fmt} keeps the data as it is"
        )


def report_text(out: Path, fmt: str, *, redact: bool = True, summary_only: bool = False) -> str:
    """The report of OUT as the text to print or write: ``markdown`` (``report.report``; with
    ``summary_only`` its head and first section only), ``json`` (``report.report_data``, indented,
    with C1 controls and bidi marks escaped) or ``issue`` (``issue.issue``, redacted unless
    ``redact`` is False). Markdown and the issue are cleaned for a terminal (``terminal.clean``).
    Raises ``report.ReportError`` or ``FileNotFoundError`` when OUT cannot be reported on."""
    from logcorr.render import issue, report

    if fmt == "json":
        return json_inert(json.dumps(report.report_data(out), indent=1, ensure_ascii=False)) + "\n"
    if fmt == "issue":
        return clean(issue.issue(out, redact=redact))
    text = clean(report.report(out))  # a terminal and a Markdown file alike
    if summary_only:
        parts = text.split("\n## ", 2)
        text = parts[0] + "\n## " + parts[1].rstrip("\n") + "\n" if len(parts) > 1 else parts[0]
    return text


def file_error(e: OSError, out: Path, output: Path) -> str:
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


def draw_timeline(out: Path, output: Path, fmt: str, **window) -> str:
    """Draw OUT's timeline into ``output``: the page (``fmt`` html: ``timeline.timeline``) or its first
    view as a picture (png, svg: ``timeline.image``), with ``window`` (``since``, ``until``, ``room``,
    ``role``, ``detail``) as they take it. Returns the line that says what was written. Raises
    ``timeline.TimelineError`` (nothing to draw, a bad window) or ``OSError``."""
    from logcorr.render.timeline import image, timeline

    info = timeline(out, output, **window) if fmt == "html" else image(out, output, fmt, **window)
    binned = (
        f", {info.counts['batches']:,} batches drawn as {info.counts['runs']:,} runs" if info.binned else ""
    )
    return f"wrote {info.html} ({info.bytes / 1e6:.1f} MB, {len(info.lanes)} lanes{binned})"


def trace_written(output: Path, counts: dict) -> str:
    """The line that says what ``trace.export_chrome_trace`` wrote into ``output`` (its ``counts``)."""
    return (
        f"wrote {output} ({counts['bytes'] / 1e6:.1f} MB: {counts['processes']} processes, {counts['threads']} threads, "
        + (f"{counts['batches']:,} batches" if counts["detail"] else f"{counts['runs']:,} runs of batches")
        + f", {counts['counters']:,} counter points, {counts['instants']:,} instant events); open it in ui.perfetto.dev"
    )
