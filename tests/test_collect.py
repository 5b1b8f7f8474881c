"""`logcorr collect` with real parts (issue 32): real py-spy against real Python processes titled as
SGLang titles them (setproctitle), a real HTTP server on 127.0.0.1, a journal built by
systemd-journal-remote, a ptrace refusal by a real unprivileged py-spy; then `logcorr ingest` of the
bundle and its report."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from logcorr.analysis import saved
from logcorr.cli import app
from logcorr.collect import CollectError, collect, find_processes, parse_span
from logcorr.ingest import ingest
from logcorr.parsers.collect import STEP_LINE, probes
from logcorr.render.report import report
from tests.conftest import need_journalctl


def _pyspy_binary() -> str | None:
    """The py-spy executable the test extra installed (the wheel's own binary, which the
    unprivileged run below can execute), else whatever ``py-spy`` is on PATH: under pyenv that
    is a shell shim into /root, which the user nobody may not run."""
    try:
        dist = importlib.metadata.distribution("py-spy")
    except importlib.metadata.PackageNotFoundError:
        return shutil.which("py-spy")
    for f in dist.files or []:
        if f.name == "py-spy" and Path(dist.locate_file(f)).is_file():
            return str(Path(dist.locate_file(f)).resolve())
    return shutil.which("py-spy")


PYSPY = _pyspy_binary()
JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
SETPRIV = shutil.which("setpriv")

# A scheduler waiting in a thread lock (as a rank waits in a collective), or busy: one frame deeper
# every 0.1 s, so two dumps a second apart never show the same stack.
PROCESS = """
import sys, threading, time, setproctitle
setproctitle.setproctitle(sys.argv[1])
def wait_in_lock(lock):
    lock.acquire()
def descend(depth, t0):
    while time.monotonic() - t0 < depth * 0.1:
        pass
    descend(depth + 1, t0)
if sys.argv[2] == "busy":
    descend(1, time.monotonic())
lock = threading.Lock()
lock.acquire()
print("ready", flush=True)
wait_in_lock(lock)
"""


def _can_dump() -> str | None:
    """Why py-spy cannot dump a child here, or None when it can."""
    if PYSPY is None:
        return "py-spy is not installed (pip install py-spy)"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.3)
        r = subprocess.run(
            [PYSPY, "dump", "--pid", str(child.pid)], check=False, capture_output=True, text=True, timeout=20
        )
        return None if r.returncode == 0 else f"py-spy cannot attach here: {r.stderr.strip()[-200:]}"
    finally:
        child.kill()
        child.wait()


CANNOT_DUMP = _can_dump()
needs_pyspy = pytest.mark.skipif(CANNOT_DUMP is not None, reason=str(CANNOT_DUMP))

# collect finds schedulers by their title on the whole machine: two tests starting theirs at once on two
# xdist workers would each dump the other's too (CI, stop 59: 16 captures where 8 were taken). One worker.
pytestmark = pytest.mark.xdist_group("collect")


@pytest.fixture
def schedulers():
    """Four scheduler processes of one TP group: TP0-TP2 waiting in a lock, TP3 busy. Yields
    {title: pid}; they are killed at the end (the test started them)."""
    pytest.importorskip("setproctitle")
    procs = {}
    for tp in range(4):
        title = f"sglang::scheduler_TP{tp}"
        mode = "busy" if tp == 3 else "wait"
        procs[title] = subprocess.Popen(
            [sys.executable, "-c", PROCESS, title, mode], stdout=subprocess.DEVNULL
        )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the title is in /proc once setproctitle ran
        titles = {p.title for p in find_processes()}
        if set(procs) <= titles:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    yield {title: p.pid for title, p in procs.items()}
    for p in procs.values():
        p.kill()
        p.wait()


class _Engine(BaseHTTPRequestHandler):
    """An engine's endpoints: /health fast, /health_generate slow (3 s), /server_info failing."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/health_generate":
            time.sleep(3)
        status, body = {
            "/health": (200, b""),
            "/health_generate": (200, b"ok"),
            "/server_info": (500, b"Internal Server Error"),
            "/get_server_info": (200, b'{"tp_size": 4}'),
            "/v1/loads?include=all": (200, b'{"loads": []}'),
            "/metrics": (200, b"sglang:num_running_reqs 0\n"),
        }.get(self.path, (404, b"not found"))
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the collector gave up on the slow one
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def engine_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _entry(at: datetime, pid: int, unit: str, message: str) -> str:
    us = int(at.timestamp() * 1e6)
    fields = {
        "__REALTIME_TIMESTAMP": str(us),
        "__MONOTONIC_TIMESTAMP": str(us - 1_700_000_000_000_000),
        "_BOOT_ID": "d81e5a3c6f0b4b2a9e7c1f4d8a2b6c3e",
        "_MACHINE_ID": "4c2f8e1a9b7d4e6f8a3c5b1d2e9f0a7c",
        "_HOSTNAME": socket.gethostname(),  # the journal of the host collected
        "_PID": str(pid),
        "_SYSTEMD_UNIT": unit,
        "MESSAGE": message,
    }
    return "".join(f"{k}={v}\n" for k, v in fields.items()) + "\n"


@pytest.fixture
def journal_dir(tmp_path):
    """A journal (systemd-journal-remote) with two decode batch lines 10 and 5 minutes ago and one 2 hours
    ago, outside a 30-minute window."""
    if not JOURNAL_REMOTE.exists():
        pytest.skip("systemd-journal-remote not installed (apt-get install systemd-journal-remote)")
    need_journalctl()
    now = datetime.now(UTC).replace(microsecond=0)
    unit = "sglang-decode.service"
    text = "".join(
        _entry(
            now - age, 3371, unit, f"[{(now - age):%Y-%m-%d %H:%M:%S} TP0] Decode batch, #running-req: {n}"
        )
        for n, age in ((7, timedelta(hours=2)), (41, timedelta(minutes=10)), (42, timedelta(minutes=5)))
    )
    (tmp_path / "day.export").write_text(text)
    folder = tmp_path / "journal"
    folder.mkdir()
    cmd = [
        str(JOURNAL_REMOTE),
        "--split-mode=none",
        f"--output={folder / 'remote.journal'}",
        str(tmp_path / "day.export"),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    return folder


def _steps(manifest: dict, kind: str) -> list[dict]:
    return [a for a in manifest["artifacts"] if a["kind"] == kind]


@needs_pyspy
def test_collect_two_rounds_endpoints_and_journal_then_ingest_and_report(
    tmp_path, schedulers, engine_url, journal_dir
):
    bundle = tmp_path / "bundle-gpu-node-1"
    t0 = time.monotonic()
    manifest = collect(
        bundle, urls=[engine_url], rounds=2, interval="2s", budget="20s", timeout="1s", journal_dir=journal_dir,
        archive=True,
    )  # fmt: skip
    took = time.monotonic() - t0
    assert took < 20
    started, ended = (
        datetime.fromisoformat(manifest[k].replace("Z", "+00:00")) for k in ("started", "ended")
    )
    assert (ended - started).total_seconds() < 20
    assert json.loads((bundle / "manifest.json").read_text()) == manifest
    found = {p["title"]: p["pid"] for p in manifest["processes"]}
    assert {t: found.get(t) for t in schedulers} == schedulers

    # two rounds of every scheduler, each dump with its capture time, pid, title and duration
    dumps = [d for d in _steps(manifest, "pyspy") if d["pid"] in schedulers.values()]
    assert sorted((d["round"], d["title"]) for d in dumps) == [
        (r, t) for r in (1, 2) for t in sorted(schedulers)
    ]
    assert all(
        d["exit"] == 0 and d["error"] is None and d["bytes"] > 0 and d["duration_ms"] > 0 for d in dumps
    )
    times = {r: [datetime.fromisoformat(d["captured_at"]) for d in dumps if d["round"] == r] for r in (1, 2)}
    assert min(times[2]) - max(times[1]) >= timedelta(seconds=1.9)  # --interval 2s between the rounds
    busy = schedulers["sglang::scheduler_TP3"]
    assert f"Process {busy}: sglang::scheduler_TP3" in (bundle / f"pyspy/round1-pid{busy}.txt").read_text()

    # the endpoints: status, latency, the timeout
    asked = {a["url"].removeprefix(engine_url): a for a in _steps(manifest, "endpoint")}
    assert asked["/health"]["status"] == 200 and asked["/health"]["latency_ms"] < 1000
    assert asked["/health_generate"]["status"] is None
    assert asked["/health_generate"]["error"] == "timed out after 1 s"
    assert 1000 <= asked["/health_generate"]["latency_ms"] < 2500
    assert asked["/server_info"]["status"] == 500 and asked["/server_info"]["error"].startswith("HTTP 500")
    assert asked["/get_server_info"]["status"] == 200
    assert (bundle / asked["/get_server_info"]["file"]).read_text() == '{"tp_size": 4}'

    # the journal of the window, through --journal-dir
    (journal,) = _steps(manifest, "journal")
    assert journal["exit"] == 0 and f"--directory={journal_dir}" in journal["command"]
    export_text = (bundle / "journal.export").read_text()
    assert "#running-req: 41" in export_text and "#running-req: 42" in export_text
    assert "#running-req: 7\n" not in export_text

    # ingest of the bundle: the dumps at their capture times, the steps in probes, the journal's batches
    out = tmp_path / "out"
    result = ingest([bundle], out)
    assert [p.name for p in (out / "events").iterdir()] == [f"origin={manifest['host']}"]
    assert result.rows["batches"] == 2 and result.rows["captures"] == 8
    assert result.rows["probes"] == len(manifest["artifacts"])
    captures = pl.read_parquet(out / "captures" / "**" / "*.parquet").filter(pl.col("is_main"))
    by_round = {
        r: {d["pid"]: datetime.fromisoformat(d["captured_at"]) for d in dumps if d["round"] == r}
        for r in (1, 2)
    }
    for row in captures.iter_rows(named=True):
        assert row["capture_ts"] in (by_round[1][row["pid"]], by_round[2][row["pid"]])
    prints = captures.group_by("pid").agg(pl.col("fingerprint").n_unique().alias("n"))
    changed = {r["pid"]: r["n"] for r in prints.iter_rows(named=True)}
    assert changed == {pid: 2 if pid == busy else 1 for pid in schedulers.values()}

    desync = saved.query(out, "desync")
    assert set(desync["verdict"]) == {"divergent"}
    assert desync["groups"][0] == "idle: TP0,TP1,TP2 | running: TP3"
    assert dict(zip(desync["rank_label"], desync["no_progress"], strict=True)) == {
        "TP0": True, "TP1": True, "TP2": True, "TP3": False,
    }  # fmt: skip

    text = report(out)
    assert "**divergent**: idle: TP0,TP1,TP2 | running: TP3" in text
    assert "round 1: 4 of 4 dumps taken" in text and "round 2: 4 of 4 dumps taken" in text
    health_ms = round(asked["/health"]["latency_ms"])
    assert f"/health 200 in {health_ms} ms while /health_generate timed out after 1 s" in text
    assert "/server_info 500 in" in text

    # the archive is the same bundle
    archived = ingest([tmp_path / "bundle-gpu-node-1.tar.gz"], tmp_path / "out2")
    assert archived.rows["captures"] == 8 and archived.rows["probes"] == result.rows["probes"]


@needs_pyspy
@pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is needed to run py-spy as another user")
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run py-spy as nobody against our processes")
def test_ptrace_refused_and_py_spy_missing_are_recorded_not_fatal(tmp_path, schedulers):
    # a real refusal: py-spy run as nobody may not trace the processes of root
    binary = tmp_path / "py-spy"
    shutil.copy(PYSPY, binary)
    binary.chmod(0o755)
    tmp_path.chmod(0o755)
    unprivileged = tmp_path / "py-spy-as-nobody"
    unprivileged.write_text(
        f'#!/bin/sh\nexec {SETPRIV} --reuid=65534 --regid=65534 --clear-groups {binary} "$@"\n'
    )
    unprivileged.chmod(0o755)
    manifest = collect(tmp_path / "refused", rounds=1, budget="30s", urls=[], pyspy=str(unprivileged))
    dumps = [d for d in _steps(manifest, "pyspy") if d["pid"] in schedulers.values()]
    assert len(dumps) == 4
    for d in dumps:
        assert d["exit"] == 1 and d["file"] is None and d["bytes"] == 0
        assert (
            "Permission Denied" in d["error"] and "CAP_SYS_PTRACE" in d["fix"] and "ptrace_scope" in d["fix"]
        )
    assert (tmp_path / "refused" / "manifest.json").is_file()

    out = tmp_path / "out"
    ingest([tmp_path / "refused"], out)
    text = report(out)
    assert "round 1: 0 of" in text and "Permission Denied" in text and "CAP_SYS_PTRACE" in text

    missing = collect(
        tmp_path / "missing", rounds=1, budget="30s", urls=[], pyspy=str(tmp_path / "no-py-spy")
    )
    dumps = [d for d in _steps(missing, "pyspy") if d["pid"] in schedulers.values()]
    assert dumps and all("No such file" in d["error"] and "pip install py-spy" in d["fix"] for d in dumps)


def test_the_budget_bounds_the_run_and_steps_past_it_are_not_run(tmp_path, engine_url):
    t0 = time.monotonic()
    manifest = collect(tmp_path / "b", urls=[engine_url], rounds=3, interval="5s", budget="2s", timeout="5s")
    assert time.monotonic() - t0 < 4  # the 3 s /health_generate and the 5 s intervals are cut
    (slow,) = [a for a in _steps(manifest, "endpoint") if a["url"].endswith("/health_generate")]
    assert slow["status"] is None and slow["error"].startswith("timed out after 1.")


def test_options_are_checked_before_any_work(tmp_path):
    assert parse_span("--since", "30m") == 1800 and parse_span("--budget", "250ms") == 0.25
    with pytest.raises(CollectError, match=r"--interval '5 sec': not a span"):
        collect(tmp_path / "b", interval="5 sec")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(CollectError, match="exists and is not an empty folder"):
        collect(tmp_path / "full")
    result = CliRunner().invoke(app, ["collect", "-o", str(tmp_path / "full")])
    assert result.exit_code == 1 and "exists and is not an empty folder" in result.output


def test_the_step_line_sample_yields_its_fields():
    ev = pl.DataFrame(
        {
            "event_id": [1],
            "ts": [datetime(2026, 1, 1, tzinfo=UTC)],
            "host": ["h"],
            "unit": ["logcorr-collect"],
            "message": [STEP_LINE.sample],
            "source": ["m"],
            "source_pos": ["artifact 0"],
        }
    )
    (row,) = probes(ev).iter_rows(named=True)
    assert {k: row[k] for k in STEP_LINE.yields} == STEP_LINE.yields
    assert probes(ev.with_columns(pl.lit("sglang-decode.service").alias("unit"))).height == 0


SERVER = """
import http.server, setproctitle
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
setproctitle.setproctitle(f"python3 -m sglang.launch_server --port {srv.server_address[1]}")
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


def test_the_http_server_is_found_by_its_command_line_and_asked_on_the_port_it_listens_on(tmp_path):
    pytest.importorskip("setproctitle")
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        said = CliRunner().invoke(
            app, ["collect", "-o", str(tmp_path / "b"), "--rounds", "1", "--budget", "10s"]
        )
    finally:
        server.kill()
        server.wait()
    assert said.exit_code == 0 and f"read it with: logcorr ingest {tmp_path / 'b'}" in said.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    (found,) = [p for p in manifest["processes"] if p["pid"] == server.pid]
    assert found["role"] == "http_server" and found["ports"] == [port]
    asked = {a["url"]: a for a in _steps(manifest, "endpoint")}
    assert asked[f"http://127.0.0.1:{port}/health"]["status"] == 200
    assert asked[f"http://127.0.0.1:{port}/metrics"]["status"] == 404
