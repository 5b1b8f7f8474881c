"""``timeline()``: the per-rank swimlanes of an OUT folder as one self-contained HTML file.

Three steps, each usable alone:

- ``load(out, …)`` reads the Parquet tables into ``Swimlanes``: one lane per (host, role, DP, PP, TP,
  EP) in the order prefill, decode, router, and per lane the batches, the markers (aborts, transfer
  errors with the ``transfer_infos`` assertion apart, watchdog, health, tracebacks), the py-spy
  captures and the router requests, plus the wedge spans and the verdict. ``trace.py`` renders the
  same model as a Chrome trace.
- ``figure(swimlanes)`` arranges it as a plotly figure (UTC axis; numeric lanes, top to bottom).
- ``timeline(out, html, …)`` writes the page: a header (title, what happened, and folded under it
  the rest of the summary, the verdict, time span, sources, whether batches were binned) and the
  figure, with plotly.js inlined; ``image(out, path, "png"|"svg", …)`` its first view as a picture.

The package, by concern: ``model`` (the dataclasses, limits, styles and text helpers), ``tables``
(polars reads of the Parquet tables), ``duck`` (the DuckDB aggregations that keep a day's batch lines
out of Python), ``loading`` (``load``, ``wedges``), ``fold`` (a page of many hosts: one lane per host
but those whose findings lead), ``plot`` (``figure``) and ``page`` (``render``, ``timeline``).

The page makes no network request: plotly.js is inlined, MathJax is not loaded, and a
Content-Security-Policy allows only the page's own scripts (by hash), inline styles and ``data:``
images, so nothing can be fetched or run from elsewhere even by accident.

Log text is data. Every string that comes from the tables (messages, rids, host names, paths) is
HTML-escaped before plotly or the header sees it; plotly renders ``&lt;`` back as a literal ``<``,
so ``<script>`` in a message shows as text and runs nothing.
"""

from __future__ import annotations

from logcorr.render.timeline.loading import load, wedges
from logcorr.render.timeline.model import Swimlanes, TimelineError, TimelineInfo, Wedge
from logcorr.render.timeline.page import image, render, timeline
from logcorr.render.timeline.plot import figure, mark_hover  # noqa: F401 — mark_hover: tests/test_request_log.py

__all__ = [
    "Swimlanes",
    "TimelineError",
    "TimelineInfo",
    "Wedge",
    "figure",
    "image",
    "load",
    "render",
    "timeline",
    "wedges",
]
