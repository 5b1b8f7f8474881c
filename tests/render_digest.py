"""Digests of what a page and a trace show besides the per-line activity: marks, captures, last
batches, wedge, lanes and verdict. ``tests/golden/sample_render.json`` holds the digests of the sample
as the code before issue 21 (commit 6610c0b) drew it, made with these functions; the tests compare
today's drawings, with ticks and with runs, against them."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import numpy as np

ACTIVITY = ("prefill batch", "decode batch", "router batch", "unknown batch", "router request ok")


def _values(v) -> list:
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def _h(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def page_digest(page: str) -> dict:
    """Per plotly trace other than activity: its points (x, y, hover) in a stable order, hashed, and
    its marker style, hashed; the layout's shapes and annotations hashed, the lane labels, the verdict."""
    m = re.search(r'Plotly\.newPlot\(\s*"[^"]+",\s*', page)
    dec = json.JSONDecoder()
    data, end = dec.raw_decode(page, m.end())
    layout, _ = dec.raw_decode(page, page.index("{", end))
    traces = {}
    for t in data:
        if t["type"] == "bar" or t["name"] in ACTIVITY:
            continue
        pts = sorted(zip(_values(t["x"]), _values(t["y"]), t.get("hovertext") or [], strict=False))
        traces[t["name"]] = [len(pts), _h(pts), _h(t.get("marker"))]
    verdict = re.search(r'(?s)<div class="verdict">.*?</div>', page).group(0)
    return {
        "traces": traces,
        # order-free: the labels of captures on several lanes come in no fixed order
        "shapes": _h(sorted(json.dumps(x, sort_keys=True) for x in layout["shapes"])),
        "annotations": _h(sorted(json.dumps(x, sort_keys=True) for x in layout["annotations"])),
        "lanes": layout["yaxis"]["ticktext"],
        "verdict": _h(verdict),
    }


def trace_digest(trace: dict) -> dict:
    """Per category of the trace's events other than activity (batch, run, load): how many and their
    hash (sources by file name, capture ids left out: the sample sits in another folder on each
    machine)."""
    out = {}
    for e in trace["traceEvents"]:
        if e.get("cat") in ("batch", "run", "load"):
            continue
        shown = dict(e)
        if isinstance(shown.get("args"), dict) and shown["args"].get("source"):
            # a capture's id is a hash of its file's path: left out with the folder
            args = {k: v for k, v in shown["args"].items() if k != "capture_id"}
            shown["args"] = {**args, "source": Path(args["source"]).name}
        out.setdefault(shown.get("cat") or shown["name"], []).append(json.dumps(shown, sort_keys=True))
    return {k: [len(v), _h(sorted(v))] for k, v in sorted(out.items())}


def main(made_with: str) -> None:
    """Write ``tests/golden/sample_render.json`` anew: the sample ingested as the tests ingest it
    (journal, py-spy dumps, router log), drawn with ticks and as runs (both must digest alike).
    Run it only after a change meant to alter what the sample's timeline or trace shows, and say what
    changed in ``made_with``: ``python tests/render_digest.py "logcorr after …"``."""
    import tempfile

    from logcorr.ingest import ingest
    from logcorr.render.timeline import timeline
    from logcorr.render.trace import export_chrome_trace

    root = Path(__file__).resolve().parent.parent
    sample = root / "sample_logs"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        ingest([sample / "journal", sample / "pyspy", sample / "router.log"], out)
        pages = [
            page_digest(timeline(out, Path(tmp) / f"t{d}.html", detail=d).html.read_text())
            for d in (None, False)
        ]
        traces = []
        for d in (None, False):
            export_chrome_trace(out, Path(tmp) / f"x{d}.json", detail=d)
            traces.append(trace_digest(json.loads((Path(tmp) / f"x{d}.json").read_text())))
    assert pages[0] == pages[1] and traces[0] == traces[1], "ticks and runs must draw the same marks"
    golden = {"made_with": made_with, "timeline": pages[0], "trace": traces[0]}
    (root / "tests" / "golden" / "sample_render.json").write_text(json.dumps(golden, indent=1) + "\n")


if __name__ == "__main__":
    import sys

    main(sys.argv[1])
