"""Faults and hostile input (issue 16): nothing lost, nothing run, nothing overwritten.

One test (or a few) per finding of the issue, each reproducing it first: SQL through a folder name,
hosts overwriting each other, concurrent and repeated ``--append``, a non-atomic replace of OUT,
export length prefixes, tracebacks instead of messages, unbounded memory and disk, planted
symlinks, and wrong data (glob paths, ``\\r`` line ends, BOM, odd timestamps and rooms, Markdown).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from logcorr.analysis import database, saved
from logcorr.ingest import ingest, table_schemas
from logcorr.store import output as store
from logcorr.store import schema, views
from tests.conftest import open_db

LOG = [
    "[2025-11-05 12:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 4096, #cached-token: 0, token usage: 0.01, "
    "#running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 1, cuda graph: False, "
    "input throughput (token/s): 2049.00",
    "[2025-11-05 12:00:02 TP0] Unexpected transfer worker error for room 4793981895866140836",
    "[2025-11-05 12:00:03 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 120.00, #queue-req: 0",
]


def cli(*args: str, cwd: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """``logcorr ARGS…`` in a fresh python, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "logcorr.cli", *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        cwd=cwd,
        check=False,
    )


def no_traceback(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def write_log(path: Path, lines: list[str] = LOG) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def events(out: Path) -> pl.DataFrame:
    files = sorted((out / "events").rglob("*.parquet"))
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files], how="diagonal_relaxed")


# -- 1: SQL through a folder name -------------------------------------------------------------------


HOSTILE_FOLDER = """x" AS SELECT 42 AS v; COPY (SELECT 1) TO 'pwned.csv'; CREATE VIEW "y"""


def test_table_names_are_the_contract():
    assert set(schema.TABLES) == set(table_schemas())


def test_a_hostile_folder_name_in_out_runs_no_sql(tmp_path: Path):
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out, origin="n1")
    bad = out / HOSTILE_FOLDER / "origin=x"
    bad.mkdir(parents=True)
    pl.DataFrame({"a": [1]}).write_parquet(bad / "part-0.parquet")
    for args in (
        ("database", "-d", str(out)),
        ("query", "SELECT count(*) AS n FROM events", "-d", str(out), "-f", "csv"),
        ("timeline", "-d", str(out), "-o", str(tmp_path / "t.html")),
        ("report", "-d", str(out)),
    ):
        proc = cli(*args, cwd=tmp_path)
        no_traceback(proc)
        assert proc.returncode == 0, (args, proc.stderr)
    assert not list(tmp_path.rglob("pwned.csv"))
    con = open_db(out)
    names = {r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()}
    assert "y" not in names and not any('"' in v for v in names)
    assert "events" in names and "abort_to_assert" in names  # a table's view, a saved query's view


def test_quote_ident_doubles_quotes():
    con = duckdb.connect()
    con.execute(f"CREATE VIEW {views.quote_ident(HOSTILE_FOLDER)} AS SELECT 1 AS v")
    assert con.execute(f"SELECT v FROM {views.quote_ident(HOSTILE_FOLDER)}").fetchone() == (1,)


# -- 10: paths are not globs ------------------------------------------------------------------------


def test_out_named_like_a_glob_reads_its_own_files(tmp_path: Path):
    ingest([write_log(tmp_path / "a.log")], tmp_path / "out1", origin="n1")
    ingest([write_log(tmp_path / "b.log", LOG[:1])], tmp_path / "out[1]", origin="n1")
    got = saved.query(tmp_path / "out[1]", "SELECT count(*) AS n FROM events")
    assert got["n"].to_list() == [1]
    db = open_db(tmp_path / "out[1]")
    assert db.execute("SELECT count(*) FROM events").fetchone() == (1,)
    assert store.glob_escape("/a/out[1]*?") == "/a/out[[]1[]][*][?]"


# -- 2: many hosts ------------------------------------------------------------------------------------


T0 = 1_762_344_000_000_000  # 2025-11-05 12:00:00 UTC in µs


def export_capture(path: Path, host: str, n: int, t0: int = T0, pid: int = 4242) -> Path:
    """A ``journalctl -o export`` capture of ``n`` decode-batch entries of ``host``."""
    entries = []
    for i in range(n):
        entries.append(
            f"__CURSOR=s={host};i={i:x}\n__REALTIME_TIMESTAMP={t0 + i * 1_000_000}\n"
            f"_BOOT_ID=0123456789abcdef0123456789abcdef\n_HOSTNAME={host}\n_PID={pid}\n_COMM=python3\n"
            f"_SYSTEMD_UNIT=sglang-decode.service\nMESSAGE=[2025-11-05 12:00:{i % 60:02d} TP0] Decode batch, "
            f"#running-req: {i}, #token: 900, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1.00, "
            "#queue-req: 0\n\n"
        )
    path.write_text("".join(entries))
    return path


def test_origin_is_the_datas_host_and_the_readme_recipe_keeps_both(tmp_path: Path):
    n1 = export_capture(tmp_path / "node1.export", "gpu-node-1", 7)
    n2 = export_capture(tmp_path / "node2.export", "gpu-node-2", 5)
    for node, src in (("node1-out", n1), ("node2-out", n2)):
        proc = cli("ingest", str(src), "-o", str(tmp_path / node))
        assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (tmp_path / "node1-out" / "events").iterdir()] == ["origin=gpu-node-1"]
    assert json.loads((tmp_path / "node2-out" / "manifest.json").read_text())["origin"] == "gpu-node-2"
    subprocess.run(
        "mkdir all && cp -r node1-out/. all/ && cp -r node2-out/. all/", shell=True, cwd=tmp_path, check=True
    )
    proc = cli("database", "-d", str(tmp_path / "all"))
    assert proc.returncode == 0, proc.stderr
    got = saved.query(tmp_path / "all", "SELECT host, count(*) AS n FROM events GROUP BY host ORDER BY host")
    assert got.rows() == [("gpu-node-1", 7), ("gpu-node-2", 5)]


def test_a_plain_log_is_not_named_after_this_machine(tmp_path: Path):
    import socket

    ingest([write_log(tmp_path / "a.log")], tmp_path / "out")
    (origin,) = [p.name for p in (tmp_path / "out" / "events").iterdir()]
    assert origin != f"origin={socket.gethostname()}" and origin.startswith("origin=logs-")


def test_two_outputs_of_one_host_combined_are_refused_not_merged(tmp_path: Path):
    early = export_capture(tmp_path / "early.export", "gpu-node-1", 4)
    late = export_capture(tmp_path / "late.export", "gpu-node-1", 6, t0=T0 + 3_600_000_000)
    ingest([early], tmp_path / "a")
    ingest([late], tmp_path / "b")
    subprocess.run("mkdir all && cp -r a/. all/ && cp -r b/. all/", shell=True, cwd=tmp_path, check=True)
    parts = sorted(p.name for p in (tmp_path / "all" / "events" / "origin=gpu-node-1").iterdir())
    assert len(parts) == 2  # nothing overwritten: part-0-<run> of each
    # issue 30 item 2: every command that reads OUT refuses it, not only database (report gave a
    # report with every record twice)
    drawn = ["-o", str(tmp_path / "x")]
    for command in (["database"], ["report"], ["query", "findings"], ["timeline", *drawn], ["export", *drawn], ["show", "1"]):  # fmt: skip
        proc = cli(*command, "-d", str(tmp_path / "all"))
        no_traceback(proc)
        assert proc.returncode == 1, command
        assert "two separate ingests of origin=gpu-node-1" in proc.stderr and "--origin" in proc.stderr, (
            command
        )
        assert "part-0-" in proc.stderr  # both parts named
    assert not (tmp_path / "x").exists()


# -- 3 and 4: a lock on OUT, inputs known by identity -------------------------------------------------


def test_a_second_run_is_refused_naming_the_first_ones_pid(tmp_path: Path):
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out)
    with store.locked(out):
        proc = cli("ingest", str(write_log(tmp_path / "b.log", LOG[:2])), "--append", "-o", str(out))
        db = cli("database", "-d", str(out))
    for p in (proc, db):
        no_traceback(p)
        assert p.returncode == 1
        assert f"another logcorr run (pid {os.getpid()}) is writing it" in p.stderr
    assert events(out).height == 3


def test_concurrent_appends_both_land_or_one_is_refused(tmp_path: Path):
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out)
    logs = [
        write_log(tmp_path / f"x{i}.log", [f"[2025-11-05 12:01:0{i} TP1] line {i} {j}" for j in range(50)])
        for i in range(2)
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "logcorr.cli", "ingest", str(p), "--append", "-o", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in logs
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    landed = [i for i, (rc, _) in enumerate(results) if rc == 0]
    for rc, err in results:
        assert "Traceback" not in err
        assert rc == 0 or (rc == 1 and "another logcorr run" in err), err
    assert events(out).height == 3 + 50 * len(landed)
    assert landed


@pytest.mark.parametrize("how", ["dotdot", "dot", "symlink", "copy"])
def test_append_refuses_the_same_file_under_another_path(tmp_path: Path, how: str):
    (tmp_path / "d").mkdir()
    a = write_log(tmp_path / "d" / "a.log")
    out = tmp_path / "out"
    ingest([a], out)
    other = {
        "dotdot": tmp_path / "d" / ".." / "d" / "a.log",
        "dot": tmp_path / "d" / "." / "a.log",
    }.get(how)
    if how == "symlink":
        other = tmp_path / "link.log"
        other.symlink_to(a)
    elif how == "copy":
        other = tmp_path / "copy.log"
        other.write_bytes(a.read_bytes())
    proc = cli("ingest", str(other), "--append", "-o", str(out))
    no_traceback(proc)
    assert proc.returncode == 1, proc.stdout
    assert "already in" in proc.stderr and "--append would count it twice" in proc.stderr
    assert events(out).height == 3


# -- 5: replacing OUT atomically -----------------------------------------------------------------------


def out_count(out: Path) -> int:
    """The events of OUT as its own logcorr.duckdb reads them (a fresh process: no cache)."""
    code = (
        "import duckdb,sys; c=duckdb.connect(sys.argv[1], read_only=True);"
        "print(c.execute('SELECT count(*) FROM events').fetchone()[0])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "logcorr.duckdb"], cwd=out, capture_output=True, text=True, check=False
    )  # from inside OUT, as docs/queries.md says: its views read the Parquet files by relative paths
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout)


KILLER = """
import os, signal, sys
from logcorr.store import output as store
from logcorr.analysis import database
step, target = sys.argv[1], int(sys.argv[2])
calls = {"n": 0}
def killing(fn):
    def run(*a, **k):
        calls["n"] += 1
        if calls["n"] == target:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*a, **k)
    return run
if step == "exchange":
    store._exchange = killing(store._exchange)
elif step == "rename":
    store.os.rename = killing(store.os.rename)
else:
    database._refuse_overlapping_ids = killing(database._refuse_overlapping_ids)
from logcorr.cli import app
sys.argv = ["logcorr", "ingest", *sys.argv[3:]]
app()
"""


@pytest.mark.parametrize(("step", "nth"), [("exchange", 1), ("exchange", 2), ("database", 1)])
def test_a_kill_at_each_step_of_the_swap_leaves_a_readable_out(tmp_path: Path, step: str, nth: int):
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out)
    new = write_log(tmp_path / "b.log", LOG[:2])
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, step, str(nth), str(new), "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    assert (out / "logcorr.duckdb").exists() and (out / "manifest.json").exists()
    assert out_count(out) in (3, 2)  # old or new, each with its DuckDB file
    assert saved.query(out, "SELECT count(*) AS n FROM events")["n"][0] in (3, 2)
    ingest([write_log(tmp_path / "c.log", LOG[:1])], out)  # the next run finishes or undoes the swap
    assert not out.is_symlink() and out_count(out) == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


@pytest.mark.parametrize("embed", ["--no-embed", "--embed"])
def test_a_kill_while_the_first_outs_duckdb_file_is_written_leaves_no_out(tmp_path: Path, embed: str):
    """The DuckDB file, of views by paths relative to OUT (the default since issue 49) or of the tables
    copied in, is written inside the new folder before OUT is made: a kill then leaves no OUT."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLER,
            "database",
            "1",
            str(write_log(tmp_path / "a.log")),
            "-o",
            str(out),
            embed,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    assert not out.exists() and not out.is_symlink()
    ingest([write_log(tmp_path / "b.log", LOG[:2])], out)
    assert not out.is_symlink() and out_count(out) == 2
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_old_out_restored_when_the_duckdb_file_cannot_be_written(tmp_path: Path, monkeypatch):
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out)
    manifest = (out / "manifest.json").read_text()

    def disk_full(*a, **k):
        raise database.DatabaseError(
            "out/logcorr.duckdb: cannot write the DuckDB file: No space left on device"
        )

    monkeypatch.setattr(database, "write", disk_full)
    with pytest.raises(database.DatabaseError):
        ingest([write_log(tmp_path / "b.log", LOG[:2])], out)
    assert (out / "manifest.json").read_text() == manifest
    assert out_count(out) == 3
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


def test_an_old_versions_half_swap_is_put_back(tmp_path: Path):
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out)
    out.rename(tmp_path / ".out.old-999999999")  # killed between the old version's two renames
    ingest([write_log(tmp_path / "b.log", LOG[:2])], out, append=True)
    assert events(out).height == 5


# -- 6: export length prefixes -----------------------------------------------------------------------


def binary_entry(i: int, value: bytes, claimed: int | None = None) -> bytes:
    """An export entry whose MESSAGE is binary-safe, its length prefix ``claimed`` (default: true)."""
    import struct

    head = f"__CURSOR=s=x;i={i:x}\n__REALTIME_TIMESTAMP={T0 + i}\n_PID=7\n_HOSTNAME=h\n".encode()
    size = len(value) if claimed is None else claimed
    return head + b"MESSAGE\n" + struct.pack("<Q", size) + value + b"\n\n"


def text_entry(i: int) -> bytes:
    return f"__CURSOR=s=x;i={i:x}\n__REALTIME_TIMESTAMP={T0 + i}\n_PID=7\n_HOSTNAME=h\nMESSAGE=entry {i}\n\n".encode()


@pytest.mark.parametrize("claimed", [10_000, 2**63 + 5, 2**64 - 1, 3])
def test_a_wrong_length_prefix_keeps_the_entry_as_damaged_and_the_rest(tmp_path: Path, claimed: int):
    data = (
        text_entry(0)
        + binary_entry(1, b"bad\x1bvalue", claimed)
        + b"".join(text_entry(i) for i in range(2, 12))
    )
    path = tmp_path / "cap.export"
    path.write_bytes(data)
    proc = cli("ingest", str(path), "--all-units", "-o", str(tmp_path / "out"))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    ev = events(tmp_path / "out").sort("source_pos")
    assert ev.height == 12
    assert ev.filter(pl.col("message").str.starts_with("entry ")).height == 11  # the 10 after it too
    bad = ev.filter(pl.col("source_pos") == "s=x;i=1").row(0, named=True)
    assert bad["message"].startswith("bad") and bad["ts"] is not None
    assert f"at s=x;i=1: binary field MESSAGE: its length prefix says {claimed:,} bytes" in proc.stdout


# -- 10: timestamps out of range ---------------------------------------------------------------------


def test_negative_and_huge_realtime_kept_without_a_time(tmp_path: Path):
    entries = [
        f"__CURSOR=s=x;i={i}\n__REALTIME_TIMESTAMP={t}\n_PID=7\n_HOSTNAME=h\nMESSAGE=entry {i}\n\n"
        for i, t in enumerate([-1_000_000, T0, 10**18, 2**63 - 1])
    ]
    path = tmp_path / "cap.export"
    path.write_text("".join(entries))
    proc = cli("ingest", str(path), "--all-units", "-o", str(tmp_path / "out"))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    ev = events(tmp_path / "out").sort("source_pos")
    assert ev["ts"].is_null().to_list() == [True, False, True, True]
    assert ev["ts"].drop_nulls().dt.year().to_list() == [2025]
    assert proc.stdout.count("is not a time from 1970 to 9999: kept without a time") == 3


def test_a_huge_length_prefix_does_not_hold_the_rest_of_a_chunked_capture(tmp_path: Path, monkeypatch):
    from logcorr.inputs import export
    from logcorr.inputs.source import SourceReport

    monkeypatch.setattr(export, "CHUNK_BYTES", 512)  # many chunks after the damaged entry
    data = binary_entry(0, b"x\x01y", 2**63) + b"".join(text_entry(i) for i in range(1, 200))
    path = tmp_path / "cap.export"
    path.write_bytes(data)
    report = SourceReport(str(path), "export")
    sizes = [df.height for df in export.read_export_file(path, report)]
    assert sum(sizes) == 200 and len(sizes) > 10  # read chunk by chunk, not held to the end


# -- 9: no planted link followed, no fixed temporary name ---------------------------------------------


@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("small")
    ingest([write_log(base / "a.log")], base / "out")
    return base / "out"


@pytest.mark.parametrize(
    ("command", "name"), [("timeline", "t.html"), ("export", "trace.json"), ("report", "r.md")]
)
def test_outputs_do_not_follow_a_link_planted_at_the_old_temporary_name(
    tmp_path: Path, small_out: Path, command, name
):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / f"{name}.tmp").symlink_to(victim)
    proc = cli(command, "-d", str(small_out), "-o", str(tmp_path / name))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert (tmp_path / name).stat().st_size > 0 and not (tmp_path / name).is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, f"{name}.tmp", "victim.txt"])


def test_write_atomic_replaces_a_link_at_the_target_instead_of_writing_through_it(tmp_path: Path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "out.md").symlink_to(victim)
    store.write_atomic(tmp_path / "out.md", lambda f: f.write("new\n"))
    assert victim.read_text() == "precious\n" and (tmp_path / "out.md").read_text() == "new\n"


def test_a_read_only_target_folder_is_a_message(tmp_path: Path, small_out: Path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user that writes anywhere")
        for args in (
            ("timeline", "-d", str(small_out), "-o", str(ro / "t.html")),
            ("ingest", str(write_log(tmp_path / "a.log")), "-o", str(ro / "out")),
        ):
            proc = cli(*args)
            no_traceback(proc)
            assert proc.returncode == 1
            assert str(ro) in proc.stderr
    finally:
        ro.chmod(0o755)


# -- 10: line ends and byte order marks; 7: messages, not tracebacks ------------------------------------


def test_carriage_returns_alone_end_lines(tmp_path: Path):
    batches = [LOG[0].replace("12:00:00", f"12:00:{i:02d}") for i in range(20)]
    path = tmp_path / "tqdm.log"
    path.write_bytes(("\r".join(batches) + "\r\n" + LOG[1] + "\r\n").encode())
    ingest([path], tmp_path / "out")
    ev = events(tmp_path / "out")
    assert ev.height == 21 and ev.filter(pl.col("kind") == "batch").height == 20
    assert not ev["message"].str.contains("\r").any()


def test_a_byte_order_mark_does_not_cost_the_first_line_its_time(tmp_path: Path):
    path = tmp_path / "bom.log"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(LOG).encode() + b"\n")
    ingest([path], tmp_path / "out")
    ev = events(tmp_path / "out").sort("source_pos")
    assert ev.height == 3 and ev["ts"].null_count() == 0
    assert ev["message"][0] == LOG[0]


def test_a_param_that_is_not_utf8_is_a_message(small_out: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "logcorr.cli", "query", "abort_to_assert", "-d", str(small_out)]
        + ["--param", os.fsdecode(b"room=\xff")],
        capture_output=True,
        check=False,
    )
    assert b"Traceback" not in proc.stderr
    assert proc.returncode == 1
    assert b"--param room=\\xff: the value is not valid UTF-8 text" in proc.stderr


def test_a_room_outside_64_bits_is_said_and_a_negative_one_keeps_its_line(tmp_path: Path):
    path = write_log(
        tmp_path / "rooms.log",
        [
            "[2026-07-21 08:06:26 TP1] Unexpected transfer worker error for room 18446744073709551615",
            "[2026-07-21 08:06:27 TP1] Unexpected transfer worker error for room -5",
            "[2026-07-21 08:06:28 TP1] Unexpected transfer worker error for room 9223372036854775807",
        ],
    )
    proc = cli("ingest", str(path), "-o", str(tmp_path / "out"))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    said = "bootstrap room 18446744073709551615 is outside the signed 64-bit range: record kept, its room left empty"
    assert f"rooms.log at line 1: {said}" in proc.stdout + proc.stderr
    ev = events(tmp_path / "out").sort("source_pos")
    assert ev["kind"].to_list() == ["transfer_error"] * 3
    assert ev["bootstrap_room"].to_list() == [None, -5, 2**63 - 1]


def test_a_json_message_that_is_an_object_or_a_number_is_a_record_of_its_own(tmp_path: Path):
    def entry(i: int, message) -> str:
        return json.dumps(
            {"__CURSOR": f"c{i}", "__REALTIME_TIMESTAMP": str(T0 + i), "_HOSTNAME": "h", "_PID": "7",
             "MESSAGE": message}
        )  # fmt: skip

    lines = [entry(0, LOG[0]), entry(1, {"a": 1}), entry(2, 12345), entry(3, LOG[1])]
    path = tmp_path / "odd.json"
    path.write_text("\n".join(lines) + "\n")
    proc = cli("ingest", str(path), "--all-units", "-o", str(tmp_path / "out"))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    ev = events(tmp_path / "out").sort("source_pos")
    assert ev["message"].to_list() == [LOG[0], '{"a":1}', "12345", LOG[1]]
    assert ev["kind"].to_list()[1:3] == ["other", "other"]


def test_json_nested_deeper_than_python_recurses_is_kept(tmp_path: Path):
    deep = "[" * 5000 + "]" * 5000
    line = f'{{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"{T0}","_HOSTNAME":"h","MESSAGE":"ok","X":{deep}}}'
    path = tmp_path / "deep.json"
    path.write_text(line + "\n")
    proc = cli("ingest", str(path), "--all-units", "-o", str(tmp_path / "out"))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert events(tmp_path / "out")["message"].to_list() == ["ok"]


def _ingest_measured(tmp_path: Path, *inputs: Path) -> tuple[subprocess.CompletedProcess, int]:
    """``logcorr ingest`` in a child process; its peak RSS in bytes (ru_maxrss of the children)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run(
        [sys.executable, "-m", "logcorr.cli", "ingest", *map(str, inputs), "-d", str(tmp_path / "out")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return proc, max(peak, before) * 1024


@pytest.mark.heavy
def test_a_gz_bomb_is_refused_with_a_message_in_bounded_memory(tmp_path: Path):
    import gzip

    bomb = tmp_path / "router.log.1.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        for _ in range(1024):
            f.write(b"\0" * (1 << 20))  # 1 GiB of zeros in about 1 MB
    assert bomb.stat().st_size < 1_100_000
    proc, peak = _ingest_measured(tmp_path, bomb)
    assert proc.returncode == 1 and "decompression bomb" in proc.stderr and "Traceback" not in proc.stderr
    assert peak < 1 << 30
    assert not list(tmp_path.glob("**/router.log.1"))  # nothing left unpacked


@pytest.mark.heavy
def test_a_200_mb_line_is_kept_in_marked_pieces_in_bounded_memory(tmp_path: Path):
    log = tmp_path / "long.log"
    with open(log, "w") as f:
        f.write("[2025-11-05 12:00:00 TP0] " + "x" * (200 << 20) + "\n[2025-11-05 12:00:01 TP0] after\n")
    proc, peak = _ingest_measured(tmp_path, log)
    assert proc.returncode == 0, proc.stderr
    assert peak < 1.5 * (1 << 30)
    assert "(2 lines," in proc.stdout  # the long line counted once, at its first piece
    ev = pl.read_parquet(tmp_path / "out" / "events" / "**" / "*.parquet").sort("event_id")
    assert int(ev["message"].str.len_bytes().sum()) == len("[2025-11-05 12:00:00 TP0] ") + (200 << 20) + len(
        "[2025-11-05 12:00:01 TP0] after"
    )  # every byte kept
    assert ev["message"].str.len_bytes().max() <= 4 << 20  # no record holds the line whole
    assert ev.height >= 50 and f"{ev.height - 1} piece(s) of 4 MiB cut from lines over 16 MiB" in proc.stdout
    assert ev["n_lines"].to_list() == [1] + [0] * (ev.height - 2) + [1]  # later pieces count no line
    assert ev["message"][-1] == "[2025-11-05 12:00:01 TP0] after" and ev["tp_rank"][-1] == 0
