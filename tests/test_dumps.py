"""SGLang's crash and request dumps (issue 31 item 1): pickles made here in SGLang's layout, with
stand-in classes under SGLang's module names (``sglang.srt.server_args.ServerArgs``,
``sglang.srt.managers.io_struct.GenerateReqInput``), read without running any code of the file."""

from __future__ import annotations

import os
import pickle
import sys
import tracemalloc
import types
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.ingest import ingest
from logcorr.inputs import dumps
from logcorr.inputs.sniff import sniff
from logcorr.inputs.source import SourceReport

T0 = datetime(2025, 10, 29, 21, 34, 40, tzinfo=UTC).timestamp()  # the sample's abort burst
ROOMS = [4384674655194745451, 7212836654392345018, 1180591620717411303]


@dataclass
class ServerArgs:
    model_path: str = "/models/DeepSeek-V3"
    tp_size: int = 4
    dp_size: int = 1
    disaggregation_mode: str = "decode"
    disaggregation_transfer_backend: str = "mooncake"
    disable_overlap_schedule: bool = False
    watchdog_timeout: float = 300.0
    crash_dump_folder: str = "/var/crash/sglang"


@dataclass
class GenerateReqInput:
    text: str = "Hi"
    rid: str | None = None
    bootstrap_host: str | None = "10.0.0.7"
    bootstrap_port: int | None = 8998
    bootstrap_room: int | None = None
    stream: bool = False
    sampling_params: dict = field(default_factory=dict)


@pytest.fixture
def sglang_modules(monkeypatch):
    """SGLang's module names, holding the stand-ins while a test pickles them (as SGLang's classes
    would be at dump time); gone when it reads the files back."""
    names = [
        "sglang",
        "sglang.srt",
        "sglang.srt.managers",
        "sglang.srt.managers.io_struct",
        "sglang.srt.server_args",
    ]
    mods = {n: types.ModuleType(n) for n in names}
    for cls, mod in (
        (ServerArgs, "sglang.srt.server_args"),
        (GenerateReqInput, "sglang.srt.managers.io_struct"),
    ):
        cls.__module__ = mod
        setattr(mods[mod], cls.__name__, cls)
    for n, m in mods.items():
        monkeypatch.setitem(sys.modules, n, m)
    yield
    for cls in (ServerArgs, GenerateReqInput):
        cls.__module__ = __name__


def crash_dump(folder: Path, host: str = "gpu-node-1") -> Path:
    """A crash dump as ``dump_requests_before_crash`` writes it: two finished requests of the last
    5 minutes, then one in flight (its last chunk has no finish_reason, its last time is the dump's)."""
    done = {"text": "Sure.", "meta_info": {"id": "r-a", "finish_reason": {"type": "stop"}, "prompt_tokens": 12,
                                           "completion_tokens": 2, "e2e_latency": 0.5}}  # fmt: skip
    aborted = {"text": "", "meta_info": {"id": "r-b", "finish_reason": {"type": "abort", "message": "client disconnected",
                                         "status_code": 499}}}  # fmt: skip
    running = {"text": "partial", "meta_info": {"id": "r-c", "finish_reason": None}}
    requests = [
        (GenerateReqInput(rid="r-a", bootstrap_room=ROOMS[0]), done, T0, T0 + 0.5),
        (GenerateReqInput(rid="r-b", bootstrap_room=ROOMS[1]), aborted, T0 + 1, T0 + 3),
        (GenerateReqInput(rid="r-c", bootstrap_room=ROOMS[2]), running, T0 + 2, T0 + 368.25),
    ]
    data = {
        "server_args": ServerArgs(),
        "requests": requests,
        "launch_command": "/usr/bin/python3 -m sglang.launch_server --model-path /models/DeepSeek-V3 --tp 4 "
        "--disaggregation-mode decode --crash-dump-folder /var/crash/sglang",
    }
    path = folder / host / "crash_dump_2025-10-29_21-40-48.pkl"
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps(data))  # the default protocol, as pickle.dump(…) in SGLang
    return path


def test_a_crash_dump_gives_its_requests_rooms_and_in_flight_state(sglang_modules, tmp_path):
    path = crash_dump(tmp_path / "crash")
    for name in [n for n in sys.modules if n.startswith("sglang")]:
        del sys.modules[name]  # read back with no SGLang importable
    assert sniff(path) == "sglang-dump"
    ingest([path], tmp_path / "out")
    con = saved.connect(tmp_path / "out")
    rows = con.execute(
        "SELECT event, rid, bootstrap_room, ts, finish_type, status_code, host, role FROM request_log ORDER BY ts, event"
    ).fetchall()
    at = lambda s: datetime.fromtimestamp(T0 + s, UTC)  # noqa: E731
    assert rows == [
        ("received", "r-a", ROOMS[0], at(0), None, None, "gpu-node-1", "decode"),
        ("finished", "r-a", ROOMS[0], at(0.5), "stop", None, "gpu-node-1", "decode"),
        ("received", "r-b", ROOMS[1], at(1), None, None, "gpu-node-1", "decode"),
        ("received", "r-c", ROOMS[2], at(2), None, None, "gpu-node-1", "decode"),
        ("finished", "r-b", ROOMS[1], at(3), "abort", 499, "gpu-node-1", "decode"),
    ]  # r-c never finished: in flight at the crash
    config = con.execute(
        "SELECT origin, tp_size, disaggregation_mode, disaggregation_transfer_backend, disable_overlap_schedule, "
        "watchdog_timeout, model_path, host FROM config"
    ).fetchall()
    assert config == [
        ("server_args+cmdline", 4, "decode", "mooncake", False, 300.0, "/models/DeepSeek-V3", "gpu-node-1")
    ]
    src = pl.read_parquet(next((tmp_path / "out" / "sources").glob("**/*.parquet")))
    assert src["format"].to_list() == ["sglang-dump"]
    assert (
        "SGLang crash dump: 3 request(s), 1 in flight at its time (2025-10-29 21:40:48 UTC); host gpu-node-1"
        in (src["notes"][0])
    )
    origins = sorted(p.name for p in (tmp_path / "out" / "events").iterdir())
    assert origins == ["origin=gpu-node-1"]  # the crash folder's host names the origin
    (dump,) = con.execute("SELECT message FROM events WHERE source_pos = 'dump'").fetchone()
    assert (
        dump
        == "crash dump crash_dump_2025-10-29_21-40-48.pkl: 2 finished and 1 unfinished request(s) in flight at the crash"
    )


class Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(sglang_modules, tmp_path):
    """A dump carrying ``os.system`` among SGLang's classes, and a pickle with no SGLang class at all:
    both refused with a message naming why; the command they carry never ran."""
    marker = tmp_path / "ran"
    good = crash_dump(tmp_path / "crash")
    evil = tmp_path / "evil-dump.pkl"
    evil.write_bytes(pickle.dumps({"server_args": ServerArgs(), "requests": [(Evil(marker), {}, T0, T0)]}))
    other = tmp_path / "model.pkl"
    other.write_bytes(pickle.dumps([Evil(marker)]))
    for name in [n for n in sys.modules if n.startswith("sglang")]:
        del sys.modules[name]
    assert (sniff(evil), sniff(other)) == ("sglang-dump", "pickle")
    ingest([good, evil, other], tmp_path / "out")
    assert not marker.exists()
    src = pl.read_parquet(next((tmp_path / "out" / "sources").glob("**/*.parquet"))).sort("source")
    errors = dict(
        zip(
            src["source"].map_elements(lambda s: Path(s).name, return_dtype=pl.String),
            src["errors"],
            strict=True,
        )
    )
    assert (
        f"asks for {os.system.__module__}.system: not an SGLang class or a plain type"
        in errors["evil-dump.pkl"]
    )
    assert "a Python pickle that names no SGLang class: not read" in errors["model.pkl"]
    assert errors["crash_dump_2025-10-29_21-40-48.pkl"] is None
    with pytest.raises(dumps.DumpError, match="system: not an SGLang class"):
        dumps.load(evil)
    assert not marker.exists()


def test_a_request_dump_and_a_dump_cut_short(sglang_modules, tmp_path):
    """A request dump (``D/<time>.pkl``, no host folder, every request finished) and the same file cut
    in half: the first read whole, the second refused with what is wrong."""
    done = {"text": "ok", "meta_info": {"id": "r-1", "finish_reason": {"type": "length"}}}
    data = {
        "server_args": None,
        "requests": [(GenerateReqInput(rid="r-1", bootstrap_room=ROOMS[0]), done, T0, T0 + 9)],
    }
    path = tmp_path / "dumps" / "2025-10-29_21-34-49.pkl"
    path.parent.mkdir()
    path.write_bytes(pickle.dumps(data))
    cut = tmp_path / "cut.pkl"
    cut.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    for name in [n for n in sys.modules if n.startswith("sglang")]:
        del sys.modules[name]
    ingest([path, cut], tmp_path / "out")
    con = saved.connect(tmp_path / "out")
    assert con.execute(
        "SELECT event, rid, bootstrap_room, finish_type FROM request_log ORDER BY ts"
    ).fetchall() == [
        ("received", "r-1", ROOMS[0], None),
        ("finished", "r-1", ROOMS[0], "length"),
    ]
    src = pl.read_parquet(next((tmp_path / "out" / "sources").glob("**/*.parquet"))).sort("source")
    assert "SGLang request dump: 1 request(s), 0 in flight" in src["notes"][1]
    assert "cut short (pickle data was truncated): nothing of it can be read" in src["errors"][0]


def test_a_request_dump_is_read_a_batch_of_requests_at_a_time(sglang_modules, tmp_path, monkeypatch):
    """Issue 47 item 5 (the trial's F6): a dump was unpickled whole and every request's objects held
    until the last was made into records (400,000 requests: 1.02 GB here, 2.34 GB in the trial). Each
    request is now made into its records as the pickle appends it (SGLang's pickler: 1,000 at a time) and
    let go, the records waiting in a scratch file for the dump's time: reading 8,000 requests takes far
    less Python memory than their objects alone, and gives the same records in the same order."""
    n = 8_000
    requests = [
        (GenerateReqInput(rid=f"r{i}", bootstrap_room=i * 7919),
         {"text": "ok", "meta_info": {"id": f"r{i}", "finish_reason": {"type": "stop"} if i % 4 else None}},
         T0 + i / 1000, T0 + i / 1000 + 0.5)
        for i in range(n)
    ]  # fmt: skip
    path = tmp_path / "2025-10-29_21-34-49.pkl"
    path.write_bytes(
        pickle.dumps({"server_args": ServerArgs(), "requests": requests, "launch_command": "sglang"})
    )
    del requests
    tracemalloc.start()
    pickle.loads(path.read_bytes())  # the objects of the whole dump (SGLang's classes still importable)
    whole = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    for name in [n for n in sys.modules if n.startswith("sglang")]:
        del sys.modules[name]
    monkeypatch.setattr(dumps, "CHUNK_ROWS", 1_000)
    report = SourceReport(str(path), dumps.FORMAT)
    tracemalloc.start()
    chunks = list(dumps.read(path, report, tmp_path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < whole / 4, (peak, whole)
    assert len(chunks) > 12  # 14,001 records a thousand at a time: most of them through the scratch file
    records = pl.concat(chunks)
    assert records.height == 1 + n + 6_000 + 1  # server_args, each Receive, the Finishes, the dump
    first, last = records.row(0, named=True), records.row(-1, named=True)
    latest = datetime.fromtimestamp(T0 + 7.999 + 0.5, UTC)
    assert (first["source_pos"], first["ts"], first["cmdline"]) == ("server_args", latest, "sglang")
    assert first["message"].startswith("server_args=ServerArgs(model_path='/models/DeepSeek-V3', tp_size=4")
    assert (last["source_pos"], last["ts"]) == ("dump", latest)
    assert (
        last["message"]
        == "request dump 2025-10-29_21-34-49.pkl: 6000 finished and 2000 unfinished request(s)"
    )
    assert records["source_pos"][1:5].to_list() == [
        "requests[0] created",
        "requests[1] created",
        "requests[1] finished",
        "requests[2] created",
    ]
    assert records.filter(pl.col("source_pos") == "requests[7999] finished")["message"].item() == (
        "Finish: obj=GenerateReqInput(rid='r7999', bootstrap_room=63344081), "
        "out={'text': 'ok', 'meta_info': {'id': 'r7999', 'finish_reason': {'type': 'stop'}}}"
    )
    assert report.unit_roles == {"sglang request dump": "decode"}
    assert report.notes == [
        "SGLang request dump: 8,000 request(s), 2,000 in flight at its time (2025-10-29 21:34:48 UTC)"
    ]
