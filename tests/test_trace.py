"""``logcorr export --format chrome-trace``: the Trace Event Format's rules, checked on the sample
incident and on a hand-made OUT."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from test_timeline import ASSERT_RANKS, DECODE_STOP, RESTART, hand_made_out, sample_out  # noqa: F401

from logcorr.render.trace import export_chrome_trace

# one worker runs the module (pytest-xdist --dist loadgroup): the sample's two Chrome traces written once
# (sample_trace, sample_runs)
pytestmark = pytest.mark.xdist_group("trace")

PHASES_WITH_TS = {"X", "i", "I", "B", "E", "C", "b", "e", "n", "s", "t", "f"}
ROOM = "4384674655194745451"  # the room R of the sample (sample_logs/README.md)
METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index", "process_labels"}


def us(t) -> int:
    return round(t.timestamp() * 1_000_000)


def check_trace(path: Path) -> dict:
    """Parse ``path`` as JSON and check the Trace Event Format's rules; returns the parsed trace.

    Rules: an object with a ``traceEvents`` list; every event has ``name``, ``ph``, ``pid``, ``tid``
    (integers); every non-metadata event an integer or float ``ts`` ≥ 0; ``X`` a ``dur`` ≥ 0; ``i`` a
    scope ``s`` in g/p/t; ``args`` objects; metadata events of the known names with their ``args``;
    every pid named by ``process_name`` and every (pid, tid) used by ``thread_name`` (counters, ``C``,
    belong to their process: only the pid must be named); a counter's ``args`` numbers; the ``X``
    events of one thread properly nested (each starts after the previous one ended, or lies within it).
    """
    trace = json.loads(path.read_text())
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    named_pids, named_threads, used, used_pids = set(), set(), set(), set()
    spans = defaultdict(list)
    flows = defaultdict(list)
    for e in trace["traceEvents"]:
        assert {"name", "ph", "pid", "tid"} <= e.keys(), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e.get("args", {}), dict), e
        if e["ph"] == "M":
            assert e["name"] in METADATA and isinstance(e["args"], dict), e
            if e["name"] == "process_name":
                named_pids.add(e["pid"])
                assert e["args"]["name"]
            if e["name"] == "thread_name":
                named_threads.add((e["pid"], e["tid"]))
                assert e["args"]["name"]
            continue
        assert e["ph"] in PHASES_WITH_TS, e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
            used_pids.add(e["pid"])
            continue
        used.add((e["pid"], e["tid"]))
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        if e["ph"] == "i":
            assert e.get("s", "t") in ("g", "p", "t"), e
        if e["ph"] in ("s", "t", "f"):
            flows[e["id"]].append(e)
    for fid, steps in flows.items():  # a flow: one start, then steps, one finish, in time order
        assert isinstance(fid, str) and fid, steps
        assert [e["ph"] for e in steps] == ["s", *["t"] * (len(steps) - 2), "f"], fid
        assert [e["ts"] for e in steps] == sorted(e["ts"] for e in steps), fid
    assert {p for p, _ in used} | used_pids <= named_pids
    assert used <= named_threads
    for track, items in spans.items():
        stack: list[float] = []
        for start, end in sorted(items, key=lambda se: (se[0], -se[1])):
            while stack and start >= stack[-1]:
                stack.pop()
            assert not stack or end <= stack[-1], f"overlapping complete events on {track} at {start}"
            stack.append(end)
    return trace


def names(trace: dict) -> tuple[dict, dict]:
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"
    }
    return procs, threads


@pytest.fixture(scope="module")
def sample_trace(sample_out: Path, tmp_path_factory) -> dict:  # noqa: F811
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    counts = export_chrome_trace(sample_out, path)
    assert counts["batches"] > 1000 and counts["bytes"] == path.stat().st_size
    return check_trace(path)


def test_sample_engines_and_ranks(sample_trace: dict) -> None:
    procs, threads = names(sample_trace)
    assert {"prefill (gpu-node-1)", "decode (gpu-node-1)"} <= set(procs.values())
    assert any(p.startswith("router") for p in procs.values())
    batches = {(e["pid"], e["tid"]) for e in sample_trace["traceEvents"] if e.get("cat") == "batch"}
    lanes = sorted(f"{procs[p].split()[0]} {threads[(p, t)]}" for p, t in batches)
    assert lanes == sorted(f"{role} TP{i}" for role in ("prefill", "decode") for i in range(4))


def test_sample_assertion_instants_on_prefill_tp0_tp1_tp3(sample_trace: dict) -> None:
    procs, threads = names(sample_trace)
    asserts = [e for e in sample_trace["traceEvents"] if e.get("cat") == "assertion"]
    assert (
        sorted(f"{procs[e['pid']].split()[0]} {threads[(e['pid'], e['tid'])]}" for e in asserts)
        == ASSERT_RANKS
    )
    assert all(e["ph"] == "i" and e["args"]["bootstrap_room"] == "4384674655194745451" for e in asserts)


def test_sample_wedge_and_last_decode_batch(sample_trace: dict) -> None:
    procs, _ = names(sample_trace)
    [wedge] = [e for e in sample_trace["traceEvents"] if e.get("cat") == "wedge"]
    assert procs[wedge["pid"]].startswith("decode")
    assert wedge["ts"] == us(DECODE_STOP) and wedge["ts"] + wedge["dur"] == us(RESTART)
    decode = [e for e in sample_trace["traceEvents"] if e.get("cat") == "batch" and e["pid"] == wedge["pid"]]
    before = [e["ts"] for e in decode if e["ts"] <= us(RESTART)]
    assert max(before) == us(DECODE_STOP)
    pyspy = [e for e in sample_trace["traceEvents"] if e.get("cat") == "pyspy" and e["pid"] == wedge["pid"]]
    assert {e["name"] for e in pyspy} >= {"py-spy: broadcast (gloo)", "py-spy: all_reduce (nccl)"}


@pytest.fixture(scope="module")
def sample_runs(sample_out: Path, tmp_path_factory) -> dict:  # noqa: F811
    path = tmp_path_factory.mktemp("trace") / "runs.json"
    counts = export_chrome_trace(sample_out, path, detail=False)
    assert not counts["detail"] and counts["batches"] == 0 and 0 < counts["runs"] < 100
    return check_trace(path)


def test_sample_runs_keep_the_wedge_marks_and_captures(sample_trace: dict, sample_runs: dict) -> None:
    """Without per-line slices the sample's trace still says what the detailed one says: the same
    wedge, instants (assertions, aborts, watchdog, captures …) and metadata; the decode runs end at
    the last decode batch before the restart, exactly."""

    def without(trace, cats):
        return sorted(json.dumps(e, sort_keys=True) for e in trace["traceEvents"] if e.get("cat") not in cats)

    assert without(sample_runs, {"run", "load"}) == without(sample_trace, {"batch", "load"})
    procs, _ = names(sample_runs)
    [wedge] = [e for e in sample_runs["traceEvents"] if e.get("cat") == "wedge"]
    runs = [e for e in sample_runs["traceEvents"] if e.get("cat") == "run" and e["pid"] == wedge["pid"]]
    ends = [e["args"]["last_line"] for e in runs if e["ts"] <= us(RESTART)]
    assert max(ends) == DECODE_STOP.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    batches = sum(e.get("cat") == "batch" for e in sample_trace["traceEvents"])
    lines = sum(
        e["args"]["lines"]
        for e in sample_runs["traceEvents"]
        if e.get("cat") == "run" and e["name"] != "router requests"
    )
    assert lines == batches
    counters = {e["name"] for e in sample_runs["traceEvents"] if e["ph"] == "C"}
    assert {"batch lines/s", "#running-req (Σ DP groups)", "#prealloc-req (Σ DP groups)"} <= counters


def test_sample_trace_shows_what_it_showed_before_runs(sample_trace: dict, sample_runs: dict) -> None:
    """Instants, wedge and names are those the code before issue 21 wrote for the sample
    (``tests/golden/sample_render.json``), with a slice per line and with runs."""
    from render_digest import trace_digest

    golden = json.loads((Path(__file__).parent / "golden" / "sample_render.json").read_text())["trace"]
    assert trace_digest(sample_trace) == golden
    assert trace_digest(sample_runs) == golden


def test_hand_made_trace_rules_and_escaping(tmp_path: Path) -> None:
    out = hand_made_out(tmp_path / "out", hostile=True)
    path = tmp_path / "t.json"
    counts = export_chrome_trace(out, path)
    trace = check_trace(path)
    assert counts["batches"] == sum(e.get("cat") == "batch" for e in trace["traceEvents"])
    aborts = [e for e in trace["traceEvents"] if e.get("cat") == "abort"]
    assert len(aborts) == 20 and all("rid" in e["args"] and "message" in e["args"] for e in aborts)
    assert "<script>alert(1)</script>" in {e["args"]["rid"] for e in aborts}  # data stays data in JSON


def test_filters_pass_through(tmp_path: Path) -> None:
    out = hand_made_out(tmp_path / "out")
    path = tmp_path / "t.json"
    export_chrome_trace(out, path, role="decode", since="21:34:00", until="21:35:00")
    trace = check_trace(path)
    procs, _ = names(trace)
    assert set(procs.values()) == {"decode (gpu-node-1)"}
    assert all(
        us(DECODE_STOP.replace(minute=34, second=0, microsecond=0)) <= e["ts"]
        for e in trace["traceEvents"]
        if e["ph"] in ("X", "i") and e.get("cat") != "wedge"
    )


def test_cli_export(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from logcorr.cli import app

    out = hand_made_out(tmp_path / "out")
    path = tmp_path / "trace.json"
    r = CliRunner().invoke(app, ["export", "--format", "chrome-trace", "-d", str(out), "-o", str(path)])
    assert r.exit_code == 0, r.output
    assert f"wrote {path}" in r.output
    check_trace(path)
    r = CliRunner().invoke(app, ["export", "--format", "csv", "-d", str(out)])
    assert r.exit_code == 1 and "the only format is chrome-trace" in r.output


def test_runs_and_detail(tmp_path: Path) -> None:
    """A small OUT gets a slice per line by default; --runs gives runs whose lines add up to them, with
    the decode runs ending at the wedge; --detail forces lines on a window that would be runs."""
    from typer.testing import CliRunner

    from logcorr.cli import app

    out = hand_made_out(tmp_path / "out")
    lines, runs, narrow = tmp_path / "lines.json", tmp_path / "runs.json", tmp_path / "narrow.json"
    for path, flags in ((lines, []), (runs, ["--runs"])):
        r = CliRunner().invoke(app, ["export", "-d", str(out), "-o", str(path), *flags])
        assert r.exit_code == 0, r.output
    assert "runs of batches" in r.output
    by_line, by_run = check_trace(lines), check_trace(runs)
    batches = [e for e in by_line["traceEvents"] if e.get("cat") == "batch"]
    slices = [e for e in by_run["traceEvents"] if e.get("cat") == "run"]
    assert not [e for e in by_run["traceEvents"] if e.get("cat") == "batch"]
    assert sum(e["args"]["lines"] for e in slices if e["name"] != "router requests") == len(batches)
    procs, _ = names(by_run)
    decode = [e for e in slices if procs[e["pid"]].startswith("decode")]
    stop = DECODE_STOP.replace(second=47, microsecond=0)  # the hand-made OUT's decode stop: 21:34:47
    ends = [datetime.fromisoformat(e["args"]["last_line"]) for e in decode if e["ts"] < us(stop)]
    assert len(ends) == 4 and all(stop - timedelta(seconds=1) < t <= stop for t in ends)  # 1 line/s
    # counters: the line rate of decode drops to 0 in the wedge
    rate = [
        e
        for e in by_run["traceEvents"]
        if e["ph"] == "C" and e["name"] == "batch lines/s" and procs[e["pid"]].startswith("decode")
    ]
    assert any(e["args"]["value"] == 0 and us(stop) < e["ts"] < us(RESTART) for e in rate)
    counts = export_chrome_trace(out, narrow, since="21:34:00", until="21:35:00", detail=True)
    assert counts["detail"] and counts["batches"] > 0 and counts["runs"] == 0
    check_trace(narrow)


def test_sample_counters_show_decode_load_until_the_wedge(sample_trace: dict) -> None:
    """Issue 20 item 13: decode's running requests (22, the wedge query's running_req_at_stop) up to
    the stop, no batch line in the wedge (lines/s 0), fewer after the restart; prefill's #prealloc-req
    grows while decode is wedged (77 before the restart)."""
    procs, _ = names(sample_trace)
    counters = defaultdict(list)
    for e in sample_trace["traceEvents"]:
        if e["ph"] == "C":
            counters[(procs[e["pid"]].split()[0], e["name"])].append((e["ts"], e["args"]["value"]))
    running = sorted(counters[("decode", "#running-req (Σ DP groups)")])
    before = [v for t, v in running if t <= us(DECODE_STOP)]
    assert before[-1] == 22 and max(before) == 23
    assert not [v for t, v in running if us(DECODE_STOP) < t < us(RESTART)]  # no line, no made-up value
    assert max(v for t, v in running if t > us(RESTART)) == 15
    rate = counters[("decode", "batch lines/s")]
    assert any(v == 0 and us(DECODE_STOP) < t < us(DECODE_STOP) + 5_000_000 for t, v in rate)
    prealloc = counters[("prefill", "#prealloc-req (Σ DP groups)")]
    assert max(v for t, v in prealloc if t < us(DECODE_STOP) - 60_000_000) == 1
    assert max(v for t, v in prealloc if us(DECODE_STOP) < t < us(RESTART)) == 77


def test_sample_batch_slices_say_how_long_they_last(sample_trace: dict) -> None:
    batches = [e for e in sample_trace["traceEvents"] if e.get("cat") == "batch"]
    assert all(
        e["args"]["lasts"] == "until the rank's next batch line, capped at median_interval_ms"
        for e in batches
    )
    assert all(e["dur"] <= e["args"]["median_interval_ms"] * 1000 + 1 for e in batches)


def test_sample_flows_link_room_r_across_prefill_and_decode(sample_trace: dict) -> None:
    """The room R's instants (aborts on both engines, the assertion on prefill TP0, TP1, TP3) are one
    flow in time order, each step on the thread and at the time of an instant that names the room."""
    procs, threads = names(sample_trace)
    steps = [e for e in sample_trace["traceEvents"] if e.get("cat") == "room" and e["id"] == ROOM]
    assert steps[0]["ph"] == "s" and steps[-1]["ph"] == "f"
    where = {f"{procs[e['pid']].split()[0]} {threads[(e['pid'], e['tid'])]}" for e in steps}
    assert {"prefill TP0", "prefill TP1", "prefill TP3", "decode TP0"} <= where
    instants = {(e["ts"], e["pid"], e["tid"]) for e in sample_trace["traceEvents"] if e["ph"] == "i"}
    assert all((e["ts"], e["pid"], e["tid"]) in instants for e in steps)
    asserts = sorted(e["ts"] for e in sample_trace["traceEvents"] if e.get("cat") == "assertion")
    assert {e["ts"] for e in steps} >= set(asserts)
    # the decode HTTP server's abort of rid 541a…, paired with R by the rooms table, opens it
    assert steps[0]["ts"] == us(datetime.fromisoformat("2025-10-29T21:34:43.465805+00:00"))
    rooms = {e["id"] for e in sample_trace["traceEvents"] if e.get("cat") == "room"}
    assert len(rooms) == 30  # the burst's 30 aborted rooms
