"""The timeline of a fleet (issue 49 item 4): above ``fold.FOLD_ABOVE_HOSTS`` hosts the page keeps a lane
per rank for the hosts whose findings lead and folds every other host into one lane, so that 64 hosts
are not 1,200 lanes. Ten hosts of ``bench/make_day.py`` (their own seed and host name each): two with
the incident (abort burst, ``transfer_infos`` assertion, decode wedge, restart), eight healthy days."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.combine import combine
from logcorr.ingest import ingest
from logcorr.render.timeline import figure, load, timeline
from logcorr.render.timeline.fold import EXPAND_HOSTS, fold_hosts

pytestmark = pytest.mark.xdist_group("timeline_fleet")

ROOT = Path(__file__).resolve().parents[1]
HOSTS = [f"gpu-node-{i:02d}" for i in range(10)]
INCIDENT = ("gpu-node-03", "gpu-node-07")


def _make_day(out: Path, seed: int, host: str, incident: bool) -> dict:
    spec = importlib.util.spec_from_file_location("make_day", ROOT / "bench" / "make_day.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_day", mod)  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod.make_day(
        4_000,
        out,
        seed=seed,
        host=host,
        incident=incident,
        journal=False,
        json_capture=False,
        log=lambda s: None,
    )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """Ten hosts' OUTs combined (``logcorr combine``): the incident on gpu-node-03 and gpu-node-07 only."""
    work = tmp_path_factory.mktemp("fleet10")
    outs = []
    for i, host in enumerate(HOSTS):
        _make_day(work / f"day-{host}", 2000 + i, host, host in INCIDENT)
        ingest([work / f"day-{host}" / "day.export"], work / host)
        outs.append(work / host)
    combine(outs, work / "all")
    return work / "all"


@pytest.fixture(scope="module")
def swimlanes(fleet):
    return load(fleet)


def test_the_hosts_of_the_incident_lead_and_keep_their_rank_lanes(fleet, swimlanes, tmp_path):
    sw = swimlanes
    assert sw.lanes.height == 190  # unfolded: 19 lanes a host (prefill and decode: 8 TP ranks and a
    assert sw.lanes.group_by("host").len()["len"].to_list() == [19] * 10  # "(no rank)" lane each; router)
    assert set(sw.host_rank[:2]) == set(INCIDENT)  # their stops lead the findings of the fleet
    page = tmp_path / "fleet.html"
    info = timeline(fleet, page)
    expanded = sw.host_rank[:EXPAND_HOSTS]
    folded = sorted(set(HOSTS) - set(expanded))
    assert len(folded) == 10 - EXPAND_HOSTS == 6
    assert len(info.lanes) == EXPAND_HOSTS * 19 + 6 == 82
    # host by host: the leading host's lanes first, role then rank, as on a page of one host
    first = sw.host_rank[0]
    assert info.lanes[:10] == [f"{first} · prefill (no rank)"] + [
        f"{first} · prefill TP{r}" for r in range(8)
    ] + [f"{first} · decode (no rank)"]
    assert info.lanes[19] == f"{sw.host_rank[1]} · prefill (no rank)"
    assert info.lanes[-6:] == [f"{h} · 19 lanes folded" for h in folded]
    html = page.read_text()
    assert f"{folded[0]} · decode TP3" in html  # a folded rank still named: in the hovers of its lane's marks
    assert "the other 6 folded into a lane each (190 lanes unfolded)" in html


def test_a_folded_lane_merges_its_ranks_runs_per_role(fleet, swimlanes):
    """A folded host's lane holds each role's runs merged: every batch line of the host is in them, and
    the decode ranks' runs (a run per rank, side by side) become one bar per stretch of activity."""
    sw = swimlanes
    drawn = fold_hosts(sw)
    host = sorted(set(HOSTS) - set(sw.host_rank[:EXPAND_HOSTS]))[0]
    lane = drawn.lanes.filter(pl.col("host") == host)
    assert lane["folded"].to_list() == [19] and lane["label"].to_list() == [f"{host} · 19 lanes folded"]
    runs = drawn.runs.filter(pl.col("lane") == lane["lane"][0])
    batches = saved.query(
        fleet,
        f"SELECT role, count(*) AS n FROM batches WHERE host = '{host}' GROUP BY role ORDER BY role",
    )
    merged = runs.filter(pl.col("kind") == "batch").group_by("role").agg(pl.col("lines").sum()).sort("role")
    assert merged.rows() == batches.rows()  # every batch line of the host, once
    before = sw.runs.filter((pl.col("host") == host) & (pl.col("role") == "decode"))
    after = runs.filter(pl.col("role") == "decode")
    assert before.height >= 8 and after.height < before.height / 4
    # the merged runs do not overlap: a gap between them is a time no decode rank logged
    after = after.sort("ts")
    assert (after["ts"].slice(1) > after["until"].slice(0, after.height - 1)).all()
    assert after["y"].unique().to_list() == [lane["lane"][0]]  # decode: the lane's middle
    assert runs.filter(pl.col("role") == "prefill")["y"].unique().to_list() == [lane["lane"][0] - 0.24]


def test_the_wedge_labels_fit_in_a_few_rows_above_the_lanes(swimlanes):
    fig, facts = figure(swimlanes)
    labels = [a for a in fig["layout"]["annotations"] if a.get("yref") == "paper" and "wedged" in a["text"]]
    rows = {a["yshift"] for a in labels}
    assert labels and rows <= {0, 16, 32, 48}
    assert fig["layout"]["margin"]["t"] <= 24 + 16 * len(rows) + 30
    assert facts["folded"]["hosts"] == sorted(set(HOSTS) - set(swimlanes.host_rank[:EXPAND_HOSTS]))


def test_a_bin_of_one_merged_mark_keeps_its_own_hover(swimlanes, monkeypatch):
    """Marks of a kind merged per lane and bin (more than ``MAX_MARKS_PER_KIND``): a bin of several says
    how many; a bin of one is that mark's hover alone (at 64 hosts, 1.8 MB of a page was "1 × …" hovers)."""
    from logcorr.render.timeline import plot

    monkeypatch.setattr(plot, "MAX_MARKS_PER_KIND", 10)
    fig, _ = figure(swimlanes)
    name = "/health 200 (an answer, not progress)"
    (health,) = [t for t in fig["data"] if t["name"].startswith(f"{name} (merged per")]
    many = [h for h in health["hovertext"] if f" × {name}</b> until " in h]
    one = [h for h in health["hovertext"] if f" × {name}</b> until " not in h]
    assert many and one
    assert all(h.startswith(f"<b>{name}</b> · ") for h in one)
    assert not any(h.startswith("<b>1 × ") for h in many)
