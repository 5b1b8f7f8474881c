"""The page: ``render()`` wraps the figure in a self-contained HTML page (header with title, verdict
and facts; plotly.js inlined; a Content-Security-Policy by script hashes), ``timeline()`` writes it.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import textwrap
from datetime import UTC, datetime
from pathlib import Path

from logcorr.render.timeline.loading import load
from logcorr.render.timeline.model import (
    MAX_ACTIVITY_MARKS,
    RUN_GAP_FACTOR,
    RUN_MIN_GAP_S,
    Swimlanes,
    TimelineInfo,
    esc,
    span_text,
)
from logcorr.render.timeline.plot import VIEW_BUTTONS_PX, figure
from logcorr.store.output import write_atomic

# What a report line's Markdown holds: a code span, a backslash escape or entity of ``markdown.md``, "**"
_INLINE = re.compile(r"(`+)(.+?)\1|\\([!-/:-@\[-`{-~])|&(lt|gt);|\*\*")


def _markdown_line(text: str) -> str:
    """One summary or verdict line (Markdown, its data escaped by ``markdown.md``) as HTML: ``**bold**``
    and ``code`` spans as tags, an escaped character as itself, every character of the text escaped."""
    out, bold, pos = [], False, 0
    for m in _INLINE.finditer(text):
        out.append(esc(text[pos : m.start()]))
        pos = m.end()
        if m.group(1):
            out.append(f"<code>{esc(m.group(2))}</code>")
        elif m.group(3) or m.group(4):
            out.append(esc(m.group(3) or {"lt": "<", "gt": ">"}[m.group(4)]))
        else:
            out.append("</b>" if bold else "<b>")
            bold = not bold
    return "".join(out) + esc(text[pos:]) + ("</b>" if bold else "")


# ------------------------------------------------------------------------------------------- page

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 14px 18px; color: #222; }}
h1 {{ font-size: 19px; margin: 0 0 6px 0; }}
.verdict {{ margin: 6px 0 8px 0; padding: 6px 10px; background: #fff4f4; border-left: 4px solid #b10026; }}
.verdict p {{ margin: 2px 0; font-size: 14px; }}
.summary {{ margin: 6px 0 4px 0; padding: 6px 10px; background: #f4f7ff; border-left: 4px solid #1f4e9c; }}
.summary p {{ margin: 2px 0; font-size: 14px; }}
.facts {{ font-size: 12.5px; color: #444; margin: 0; padding-left: 18px; }}
.facts li {{ margin: 1px 0; }}
.binned {{ color: #8a4b00; font-weight: 600; }}
details {{ margin: 4px 0 0 0; }}
details > summary {{ font-size: 13px; color: #1f4e9c; cursor: pointer; }}
</style>
</head>
<body>
<header>
<h1>{title}</h1>
{lead}
<details>
<summary>{more}</summary>
{verdict}
<ul class="facts">
{facts}
</ul>
</details>
</header>
{plot}
</body>
</html>
"""


def _sources_text(sources: list[tuple[str, str, int]]) -> str:
    """Inputs, several files of one format in one folder said once (``12 pyspy files in d/``)."""
    groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for src, fmt, n in sources:
        groups.setdefault((str(Path(src).parent), fmt), []).append((src, n))
    parts = []
    for (folder, fmt), items in groups.items():
        n = sum(k for _, k in items)
        several = f"{len(items)} {esc(fmt)} files in {esc(folder)}/ [{n:,} records]"
        parts.append(f"{esc(items[0][0])} [{esc(fmt)}, {n:,} records]" if len(items) == 1 else several)
    return "; ".join(parts)


def _facts(sw: Swimlanes, facts: dict) -> list[str]:
    """The header's bullet list (HTML, every data value escaped)."""
    items = []
    if sw.first and sw.last:
        items.append(
            f"time span {sw.first:%Y-%m-%d %H:%M:%S} – {sw.last:%Y-%m-%d %H:%M:%S} UTC "
            f"({span_text(sw.first, sw.last)}); the axis is UTC (offset +00:00); "
            + esc("; ".join(sw.clock_notes))
        )
    c = facts["counts"]
    items.append(
        f"{c['lanes']} lanes: {c['batches']:,} batches · {c['abort']:,} aborts · "
        f"{c['assertion']:,} transfer_infos assertions · {c['transfer_error']:,} other KV transfer errors · "
        f"{c['watchdog']:,} watchdog · {c['health'] + c['health_failed']:,} /health ({c['health_failed']:,} failed) · "
        f"{c['captures']:,} py-spy captures · {c['requests']:,} router request lines"
    )
    if facts.get("folded"):
        items.append(_folded_text(facts["folded"]))
    if facts["binned"]:
        items.append(
            f'<span class="binned">runs: the {c["batches"]:,} batches (and ok router requests) are drawn as '
            f"{c['runs']:,} runs, a bar per run of lines at a rank's usual pace; a run ends at a gap of more than "
            f"{RUN_GAP_FACTOR}× the rank's usual interval (at least {RUN_MIN_GAP_S:g} s) or at a new process, so a "
            "gap is a gap; hover a bar for its lines and load. ◆ the last batch of each rank's process; "
            "shaded: the wedge (from the wedge query). Narrow the window with --since/--until (to at most "
            f"{MAX_ACTIVITY_MARKS:,} lines) to see each batch.</span>"
        )
    else:
        items.append(
            "one tick per batch line; ◆ the last batch of each rank's process (a restart starts a new one); shaded: the wedge (from the wedge query); "
            "hover any mark for its line and source position"
        )
    if facts.get("framed"):
        a, b = (datetime.fromtimestamp(x / 1000, UTC) for x in facts["x_range"])
        what = (
            "from the first step of the chain (the abort burst or the transfer_infos assertion) to the first stop"
            if sw.focus[2] == "the chain"
            else "the first wedge, from its stop to the restart or the next batch"
        )
        items.append(
            f"<b>opens on {esc(sw.focus[2])}</b>, {a:%H:%M:%S}–{b:%H:%M:%S} UTC ({what}, as the report finds "
            "them): the buttons above the lanes go back and forth to the whole span; the overview under the "
            "time axis moves the view"
        )
    if facts.get("counters"):
        items.append(
            "under the lanes: the load the batch lines report, per role and bucket of "
            f"{esc(sw.bucket_s)} s (requests: each DP group's maximum, summed over DP groups; token "
            "usage: the maximum; throughput: each DP group's mean, summed; a line breaks where no batch "
            "line came; hover the role's first line for every counter)"
        )
    if sw.filters:
        items.append("filtered: " + esc(", ".join(sw.filters)))
    items += [f'<span class="binned">{esc(n)}</span>' for n in sw.notes]
    if sw.sources:
        items.append(f"sources ({esc(sw.out)}): " + _sources_text(sw.sources))
    return [f"<li>{i}</li>" for i in items]


def _folded_text(folded: dict) -> str:
    """The facts' line that says which hosts a fleet's page folds (``figure``'s ``folded``; HTML)."""
    shown, hosts = folded["expanded"], folded["hosts"]
    lead = (
        f"{esc(', '.join(shown))} (the hosts of the findings that lead, most severe first) drawn with a lane per rank; "
        if shown
        else "no host has a finding; "
    )
    return (
        f'<span class="binned">{len(shown) + len(hosts)} hosts: {lead}the other {len(hosts)} folded into a lane '
        f"each ({folded['lanes']:,} lanes unfolded): on a folded lane each role's runs are merged into one thin bar "
        "(prefill above, decode in the middle, the router below), so a gap is a time when no rank of that role "
        "logged; its marks and py-spy captures stay at their instants, each hover naming its rank</span>"
    )


def _lead(sw: Swimlanes) -> str:
    """The line the page and the picture lead with: the summary's first (What happened), else the
    verdict's (HTML); empty without either."""
    return _markdown_line((sw.summary or sw.verdict or [""])[0])


def _more(sw: Swimlanes, facts: dict) -> str:
    """The line the verdict and facts fold under: how the first view was chosen, and what is inside."""
    view = ""
    if facts.get("framed"):
        a, b = (datetime.fromtimestamp(x / 1000, UTC) for x in facts["x_range"])
        view = f"Opens on {esc(sw.focus[2])}, {a:%H:%M:%S}–{b:%H:%M:%S} UTC; the buttons above the lanes show the whole span. "
    inside = "the rest of the summary, the verdict" if sw.summary else "the verdict"
    return f"{view}Show {inside} and the facts of this drawing"


def _title(sw: Swimlanes) -> str:
    """``logcorr timeline: HOSTS, WINDOW UTC``; the window to the minute, or to the second when it is
    shorter than an hour (a 7-second window reads 21:34:40–21:34:47, not 21:34–21:34)."""
    hosts = sorted(set(sw.lanes["host"].drop_nulls().to_list()))
    where = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    return f"logcorr timeline: {where or 'no host'}{_when(sw.first, sw.last)}"


def _when(first, last) -> str:
    """``, 2025-10-29 21:34:40–21:34:47 UTC`` (see ``_title``); empty without times."""
    if not (first and last):
        return ""
    fmt = "%H:%M:%S" if (last - first).total_seconds() < 3600 else "%H:%M"
    end = f"{last:{fmt}}" if first.date() == last.date() else f"{last:%Y-%m-%d {fmt}}"
    return f", {first:%Y-%m-%d {fmt}}–{end} UTC"


def _csp(scripts: list[str]) -> str:
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in scripts
    )
    return (
        "default-src 'none'; "
        f"script-src {hashes}; "
        "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
        "connect-src 'none'; form-action 'none'; base-uri 'none'"
    )


def render(sw: Swimlanes) -> tuple[str, dict]:
    """The whole page as text, and the figure facts (see ``figure``)."""
    import plotly.io as pio

    fig, facts = figure(sw)
    plot = pio.to_html(
        fig,
        include_plotlyjs=True,
        include_mathjax=False,
        full_html=False,
        config=dict(
            displaylogo=False,
            responsive=True,
            scrollZoom=False,
            showSendToCloud=False,
            toImageButtonOptions=dict(format="png", filename="logcorr-timeline", scale=2),
            modeBarButtonsToRemove=["select2d", "lasso2d"],
        ),
        default_height=f"{fig['layout']['height']}px",
        div_id="logcorr-timeline",
    )
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", plot, flags=re.S)
    verdict = [_markdown_line(v) for v in sw.verdict] or [
        "No wedge, assertion or py-spy capture found in this window."
    ]
    # the first screen at 1280×720 shows the title, what happened and the time axis; the rest of
    # the summary, the verdict and the facts fold under one line that says how the view was chosen
    lead = [_lead(sw)] if sw.summary or sw.verdict else verdict[:1]
    rest = [_markdown_line(v) for v in sw.summary[1:]]
    page = _PAGE.format(
        csp=_csp(scripts),
        title=esc(_title(sw)),
        lead=f'<div class="summary"><p>{lead[0]}</p></div>',
        more=_more(sw, facts),
        verdict=('<div class="summary">' + "".join(f"<p>{v}</p>" for v in rest) + "</div>\n" if rest else "")
        + '<div class="verdict">'
        + "".join(f"<p>{v}</p>" for v in verdict)
        + "</div>",
        facts="\n".join(_facts(sw, facts)),
        plot=plot,
    )
    return page, facts


def timeline(
    out: Path,
    html_path: Path,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    room: int | None = None,
    role: str | None = None,
    detail: bool | None = None,
) -> TimelineInfo:
    """Draw OUT's per-rank swimlanes into one self-contained HTML file.

    Args:
        out: a folder written by ``logcorr ingest``.
        html_path: the file to write (its folder is created).
        since, until, room, role: narrow what is drawn (see ``load``).
        detail: a tick per batch line (``True``) or runs (``False``); default: ticks when the
            window holds at most ``MAX_ACTIVITY_MARKS`` lines (see ``load``).

    Returns:
        A ``TimelineInfo``: the file and its size, lane labels, whether activity was binned, counts,
        wedges and verdict.

    Raises:
        TimelineError: OUT is not a logcorr folder, or an option is invalid.

    Example:
        >>> info = timeline(Path("logcorr-out"), Path("incident.html"))  # doctest: +SKIP
        >>> info.lanes[:2]  # doctest: +SKIP
        ['prefill TP0', 'prefill TP1']
    """
    sw = load(out, since=since, until=until, room=room, role=role, detail=detail)
    page, facts = render(sw)
    return _written(Path(html_path), page, sw, facts)


def _written(path: Path, content: str | bytes, sw: Swimlanes, facts: dict) -> TimelineInfo:
    """Write ``content`` to ``path`` (its folder created; a fresh O_EXCL name beside it, so no planted
    link is followed) and tell what was drawn."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda f: f.write(content), binary=isinstance(content, bytes))
    return TimelineInfo(
        html=path,
        bytes=path.stat().st_size,
        lanes=facts["labels"],
        binned=facts["binned"],
        bin_seconds=facts["bin_seconds"],
        counts=facts["counts"],
        wedges=sw.wedges,
        verdict=sw.verdict,
        first=sw.first,
        last=sw.last,
    )


IMAGE_WIDTH_PX = 1280
IMAGE_FORMATS = ("png", "svg")


def image(
    out: Path,
    path: Path,
    fmt: str = "png",
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    room: int | None = None,
    role: str | None = None,
    detail: bool | None = None,
) -> TimelineInfo:
    """Write the timeline's first view as a static picture for a postmortem or an upstream issue:
    the page's title and its "What happened" line above the lanes and counters, as the page opens
    (framed on the chain when the report finds one), without the overview and the view buttons.

    Args:
        out, since, until, room, role, detail: as ``timeline``.
        path: the file to write (its folder is created).
        fmt: ``png`` (``IMAGE_WIDTH_PX`` wide, at twice the pixels) or ``svg``.

    Returns:
        A ``TimelineInfo`` as ``timeline``'s, ``html`` being the picture.

    Raises:
        TimelineError: OUT is not a logcorr folder, an option is invalid, or plotly's exporter
            (kaleido ≥ 1, which drives the system's Chromium or Chrome) cannot run.
    """
    from logcorr.render.timeline.model import TimelineError

    if fmt not in IMAGE_FORMATS:
        raise TimelineError(f"--format {fmt}: one of html, {', '.join(IMAGE_FORMATS)}")
    sw = load(out, since=since, until=until, room=room, role=role, detail=detail)
    fig, facts = figure(sw)
    layout = fig["layout"]
    layout.pop("updatemenus", None)
    layout["xaxis"]["rangeslider"]["visible"] = False
    lead = re.sub(r"</?code>", "", _lead(sw))
    view = ""
    if facts["x_range"]:
        a, b = (datetime.fromtimestamp(x / 1000, UTC) for x in facts["x_range"])
        view = f" · drawn {a:%H:%M:%S}–{b:%H:%M:%S} UTC" + (
            f" ({esc(sw.focus[2])})" if facts["framed"] else ""
        )
    lines = [f"<b>{esc(_title(sw))}</b>{view}"] + textwrap.wrap(lead, 170, break_on_hyphens=False)
    old_top = layout["margin"]["t"]
    top = old_top - (VIEW_BUTTONS_PX if facts["framed"] else 0) + 18 * len(lines)
    height = layout["height"] + top - old_top - 60  # no overview under the axis
    layout["title"] = dict(
        text="<br>".join(lines), x=0.005, xanchor="left", y=1 - 20 / height,  # plotly places
        yref="container", yanchor="top", font=dict(size=13),  # a title's first line, the others under it
    )  # fmt: skip
    layout["xaxis"]["title"] = None  # the title line says UTC; the label would sit on the ticks
    layout["height"], layout["margin"]["t"] = height, top
    return _written(Path(path), _export(fig, fmt, layout["height"]), sw, facts)


def _export(fig: dict, fmt: str, height: int) -> bytes:
    """The figure as PNG or SVG bytes through kaleido (plotly.js from the plotly package, no MathJax:
    nothing is fetched). A first start of Chromium sometimes answers before the page's scripts
    have loaded: tried twice."""
    from logcorr.render.timeline.model import TimelineError

    try:
        import kaleido
    except ImportError as e:
        raise TimelineError(f"--format {fmt} needs plotly's exporter: pip install 'kaleido>=1' ({e})") from e
    # choreographer logs a browser message it could not decode and goes on: not the user's concern
    logging.getLogger("choreographer").setLevel(logging.CRITICAL)
    opts = dict(format=fmt, width=IMAGE_WIDTH_PX, height=height, scale=2 if fmt == "png" else 1)
    error: Exception | None = None
    for _ in range(2):
        try:
            return kaleido.calc_fig_sync(fig, opts=opts, kopts=dict(mathjax=False))
        except Exception as e:  # noqa: BLE001 — kaleido's and choreographer's errors share no base class
            error = e
            if "ChromeNotFound" in type(e).__name__ or "BrowserFailed" in type(e).__name__:
                break
    raise TimelineError(
        f"--format {fmt}: plotly's exporter failed ({type(error).__name__}: {str(error)[:300]}); it drives "
        "Chromium or Chrome: install Debian's chromium, or name the browser in BROWSER_PATH"
    )
