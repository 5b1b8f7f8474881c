"""The page: ``render()`` wraps the figure in a self-contained HTML page (header with title, verdict
and facts; plotly.js inlined; a Content-Security-Policy by script hashes), ``timeline()`` writes it.
"""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

from logcorr.render.timeline.loading import load
from logcorr.render.timeline.model import (
    MAX_ACTIVITY_MARKS,
    RUN_GAP_FACTOR,
    RUN_MIN_GAP_S,
    Swimlanes,
    TimelineInfo,
    _span,
    esc,
)
from logcorr.render.timeline.plot import figure
from logcorr.store.output import write_atomic


def _markdown_line(text: str) -> str:
    """One verdict line as HTML: escaped, then ``**bold**`` and ``code`` spans."""
    h = esc(text)
    h = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", h)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", h)


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
details {{ font-size: 12px; color: #444; }}
</style>
</head>
<body>
<header>
<h1>{title}</h1>
{verdict}
<ul class="facts">
{facts}
</ul>
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
            f"({_span(sw.first, sw.last)}); the axis is UTC (offset +00:00); "
            + esc("; ".join(sw.clock_notes))
        )
    c = facts["counts"]
    items.append(
        f"{c['lanes']} lanes: {c['batches']:,} batches · {c['abort']:,} aborts · "
        f"{c['assertion']:,} transfer_infos assertions · {c['transfer_error']:,} other KV transfer errors · "
        f"{c['watchdog']:,} watchdog · {c['health'] + c['health_failed']:,} /health ({c['health_failed']:,} failed) · "
        f"{c['captures']:,} py-spy captures · {c['requests']:,} router request lines"
    )
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
        items.append(
            f"<b>opens on the incident</b>, {a:%H:%M:%S}–{b:%H:%M:%S} UTC (the first wedge, from the chain "
            "before it to the restart, as the report finds them): drag the handles of the overview under "
            "the time axis, or double-click the overview, to see the whole span"
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
    page = _PAGE.format(
        csp=_csp(scripts),
        title=esc(_title(sw)),
        verdict=(
            '<div class="summary">' + "".join(f"<p>{_markdown_line(v)}</p>" for v in sw.summary) + "</div>\n"
            if sw.summary
            else ""
        )
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
    html_path = Path(html_path)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    # a fresh O_EXCL name beside it: no planted link followed
    write_atomic(html_path, lambda f: f.write(page))
    return TimelineInfo(
        html=html_path,
        bytes=html_path.stat().st_size,
        lanes=sw.lanes["label"].to_list(),
        binned=facts["binned"],
        bin_seconds=facts["bin_seconds"],
        counts=facts["counts"],
        wedges=sw.wedges,
        verdict=sw.verdict,
        first=sw.first,
        last=sw.last,
    )
