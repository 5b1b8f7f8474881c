"""The third reliability trial's low-severity causes (shared/research/reliability_trial.md, F12-F23):
each reproduced as a test, named after its cause, its docstring the guarantee it holds."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from logcorr.analysis import database
from logcorr.cli import app
from tests.conftest import cli

ROUTER = (  # one router access line, as sample_logs/router.log writes them
    '2025-10-29 21:23:14  INFO http_request{method=POST uri=/generate version=HTTP/1.1 request_id="gnt-1"'
    ' status_code=200 latency="9.441684526s"}: sglang_router_rs::response: src/middleware.rs:308: finished'
    " processing request\n"
)
BATCH = "[2025-10-29 21:34:{s:02d} TP{r}] Decode batch. #running-req: {n}, #token: 100, token usage: 0.01, gen throughput (token/s): 10.00, #queue-req: 0\n"  # fmt: skip
SAMPLE = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    """An OUT of 40 decode batch lines (4 ranks, 10 s) and one router request."""
    folder = tmp_path_factory.mktemp("small")
    log = folder / "decode.log"
    log.write_text("".join(BATCH.format(s=s, r=r, n=s) for s in range(10) for r in range(4)))
    (folder / "router.log").write_text(ROUTER)
    out = folder / "out"
    got = cli("ingest", str(log), str(folder / "router.log"), "-o", str(out))
    assert got.returncode == 0, got.stderr
    return out


# a logcorr run whose os.replace of the file named first sends the signal named second to itself, just
# before the finished temporary file is renamed into place (the trial's termat.py)
SIGNAL_AT_RENAME = textwrap.dedent(
    """
    import os, signal, sys
    real = os.replace
    target, sig = sys.argv[1], getattr(signal, sys.argv[2])
    def replace(a, b, **kw):
        if str(b).endswith(target):
            os.kill(os.getpid(), sig)
        return real(a, b, **kw)
    os.replace = replace
    sys.argv = ["logcorr"] + sys.argv[3:]
    from logcorr.cli import app
    app()
    """
)


@pytest.mark.parametrize(
    ("command", "sig"),
    [
        ("timeline", "SIGTERM"),
        ("timeline", "SIGINT"),
        ("export", "SIGHUP"),
        ("export", "SIGINT"),
        ("report", "SIGTERM"),
        ("report", "SIGINT"),
        ("database", "SIGTERM"),
        ("database", "SIGHUP"),
    ],
)
def test_f12_f13_every_command_interrupted_or_terminated_says_one_line_exits_130_and_leaves_no_temp_file(
    tmp_path, small_out, command, sig
):
    """Ctrl-C, SIGTERM or SIGHUP in any command (here at the worst moment: the finished temporary file
    waiting for its rename) ends with one line naming what is left as it was, exit status 130, and no
    temporary file beside the target or in OUT (before: SIGTERM killed the command with its
    ``.t.html.XXXX.tmp`` or ``.logcorr.duckdb.tmp-PID`` left; Ctrl-C ended without a word)."""
    out = tmp_path / "out"
    subprocess.run(["cp", "-a", str(small_out), str(out)], check=True)
    before = (out / "logcorr.duckdb").read_bytes()
    target = {"timeline": "t.html", "export": "t.json", "report": "t.md", "database": "logcorr.duckdb"}[
        command
    ]
    args = [command, "-d", str(out)] + ([] if command == "database" else ["-o", str(tmp_path / target)])
    script = tmp_path / "at_rename.py"
    script.write_text(SIGNAL_AT_RENAME)
    got = subprocess.run(
        [sys.executable, str(script), target, sig, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    named = out / target if command == "database" else tmp_path / target
    assert got.returncode == 130, got.stderr
    assert got.stderr == f"logcorr: interrupted; {named} left as it was\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["at_rename.py", "out"]  # no .t.html.XXXX.tmp
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no .logcorr.duckdb.tmp-PID
    assert (out / "logcorr.duckdb").read_bytes() == before


@pytest.mark.parametrize("after_s", [0.3, 0.6, 0.9, 1.2, 1.5])
def test_f12_ctrl_c_inside_a_duckdb_query_of_any_command_is_one_line_and_130(small_out, monkeypatch, after_s):
    """Ctrl-C while DuckDB runs a command's statement ends it: one line, exit 130. DuckDB cancels the
    statement and raises its own exception (RuntimeError('Query interrupted'), no KeyboardInterrupt),
    but DuckDB 2.0.1 does so only some of the time (4 Ctrl-Cs of 10 were lost, the query running on):
    the command's handler cancels the statements of its connections itself. A Ctrl-C not obeyed
    within 20 s counts as lost (the test then cancels the query)."""
    import threading

    from logcorr.analysis import saved

    real, lost, timers = saved.connect, [], []

    def connect(out, queries=None, **options):  # the query starts right after; Ctrl-C ``after_s`` into it
        con = real(out, queries, **options)
        timers.append(threading.Timer(after_s, os.kill, (os.getpid(), signal.SIGINT)))
        timers.append(threading.Timer(after_s + 20, lambda: (lost.append(after_s), con.interrupt())))
        for t in timers:
            t.start()
        return con

    monkeypatch.setattr(saved, "connect", connect)
    sql = "SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3"
    try:
        got = CliRunner().invoke(app, ["query", "-d", str(small_out), "-f", "json", sql])
    finally:
        for t in timers:
            t.cancel()
    assert lost == []
    assert (got.exit_code, got.stderr) == (130, "logcorr: interrupted\n"), got.output


class _Interrupting:
    """A DuckDB connection whose ``execute`` of a statement holding ``pattern`` raises what DuckDB
    raises when Ctrl-C lands in that statement."""

    def __init__(self, con, pattern: str) -> None:
        self._con, self._pattern = con, pattern

    def execute(self, sql, *args, **kwargs):
        if self._pattern in sql:
            raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
        return self._con.execute(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._con, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._con.close()


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["query", "SELECT count(*) FROM events"], "CREATE OR REPLACE VIEW"),  # saved.connect's saved views
        (["query", "SELECT count(*) FROM events"], "duckdb_views()"),  # database.points_elsewhere
        (["database"], "CREATE VIEW"),  # database's saved views
        (["timeline", "-o", "t.html"], "CREATE OR REPLACE VIEW"),  # also the verdict the page can do without
    ],
)
def test_f12_an_interrupt_is_never_taken_for_a_failure_to_carry_on_from(
    tmp_path, small_out, monkeypatch, args, pattern
):
    """A handler that carries on past a failure (a saved query that does not bind, a DuckDB file that
    cannot be opened, the timeline's verdict) lets an interrupt through: DuckDB's
    InterruptException there ends the command with one line and 130 (before: taken for that
    failure and the command went on, the Ctrl-C lost)."""
    out = tmp_path / "out"
    subprocess.run(["cp", "-a", str(small_out), str(out)], check=True)
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: _Interrupting(real(*a, **k), pattern))
    monkeypatch.setattr(database, "_TEMPLATES", {})  # the views bound here, not copied from an earlier OUT
    monkeypatch.setenv(database.CACHE_ENV, "off")
    monkeypatch.chdir(tmp_path)
    got = CliRunner().invoke(app, [*args, "-d", str(out)])
    assert got.exit_code == 130, got.output
    assert got.output.startswith("logcorr: interrupted") and got.output.count("\n") == 1, got.output
    assert not (tmp_path / "t.html").exists()


def test_f14_a_killed_runs_scratch_folder_is_removed_by_a_later_run(tmp_path, monkeypatch):
    """A run killed outright (SIGKILL, the OOM killer) leaves its TMPDIR scratch folder (an unpacked
    .gz, up to 200 times its size); the next run that makes one removes it: scratch folders are named
    ``logcorr-WHAT-HOST-PID-…``, so a later run knows them as logcorr's and sees their process is gone.
    A live run's folder and a folder not named so are kept."""
    from logcorr import scratch

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", None)
    log = tmp_path / "decode.log.gz"
    import gzip

    log.write_bytes(gzip.compress("".join(BATCH.format(s=s, r=0, n=s) for s in range(50)).encode()))
    # a run killed while it read: its process gone, its unpacked copy still there
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    host = scratch._host()
    left = tmpdir / f"logcorr-ingest-{host}-{killed.pid}-ab12cd34"
    left.mkdir()
    (left / "decode.log").write_bytes(b"x" * 100_000)
    killed.kill()
    killed.wait()
    alive = tmpdir / f"logcorr-spill-{host}-{os.getppid()}-zz99yy88"  # pytest's parent: a live process
    alive.mkdir()
    other = tmpdir / "tmpabcd1234"  # someone else's
    other.mkdir()
    got = CliRunner().invoke(app, ["ingest", str(log), "-o", str(tmp_path / "out")])
    assert got.exit_code == 0, got.output
    assert sorted(p.name for p in tmpdir.iterdir()) == sorted([alive.name, other.name])
    with duckdb.connect() as con:
        n = con.execute(f"SELECT count(*) FROM '{tmp_path}/out/batches/**/*.parquet'").fetchone()[0]
    assert n == 50


def test_f16_a_full_tmpdir_names_the_input_and_the_folder_and_the_other_inputs_are_written(
    tmp_path, monkeypatch
):
    """TMPDIR full while a .gz input is unpacked: that input is named with the folder that is full
    and what to do, its partial copy removed, and every other input written (exit 3); before, the
    message was 'OSError: [Errno 28] No space left on device', naming no folder."""
    import gzip

    from logcorr.inputs import paths

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", None)
    real = paths._inflate

    def inflate_then_full(d, data, fmt):  # the first MiB fits, then the disk is full
        yield from real(d, data, fmt)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(paths, "_inflate", inflate_then_full)
    packed = tmp_path / "decode.log.gz"
    packed.write_bytes(gzip.compress("".join(BATCH.format(s=s, r=0, n=s) for s in range(50)).encode()))
    router = tmp_path / "router.log"
    router.write_text(ROUTER)
    got = CliRunner().invoke(app, ["ingest", str(packed), str(router), "-o", str(tmp_path / "out")])
    assert got.exit_code == 3, got.output
    assert (
        f"logcorr: error: {packed}: not read: {tmpdir} (TMPDIR), where logcorr unpacks or copies it, is full"
        " (No space left on device): set TMPDIR to a folder with room\n"
    ) in got.output
    assert f"written, but 1 input(s) could not be read at all: {packed}" in got.output
    with duckdb.connect() as con:
        rows = con.execute(f"SELECT source FROM '{tmp_path}/out/events/**/*.parquet'").fetchall()
    assert rows == [(str(router),)]
    assert list(tmpdir.iterdir()) == []


def _copy(out: Path, to: Path) -> Path:
    subprocess.run(["cp", "-a", str(out), str(to)], check=True)
    return to


@pytest.mark.parametrize(
    "args",
    [
        ["query", "SELECT count(*) FROM events"],
        ["report"],
        ["timeline", "-o", "t.html"],
        ["database"],
        ["show", "1"],
        ["export", "-o", "t.json"],
    ],
)
def test_f15_a_damaged_parquet_part_is_one_line_naming_it_in_every_command(tmp_path, small_out, args):
    """A Parquet part of OUT cut short (a full disk, a copy cut off): every command that reads OUT says
    which file is damaged and what to do in one line, exit 1 (before: a DuckDB or polars traceback)."""
    out = _copy(small_out, tmp_path / "out")
    part = sorted((out / "events").glob("*/*.parquet"))[0]
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    args = [str(tmp_path / a) if a.startswith("t.") else a for a in args]
    got = cli(*args, "-d", str(out))
    assert got.returncode == 1, got.stderr
    assert got.stderr == (
        f"logcorr: {part}: damaged: a Parquet file begins and ends with PAR1, this one does not (cut short?): "
        "ingest its inputs again into a new folder (OUT/manifest.json lists them)\n"
    )


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (
            "{not json",
            "not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        ),
        ('{"inputs": "x"}', "its inputs is not a list of objects"),
        ("[1, 2]", "a JSON list, not an object"),
    ],
)
def test_f15_a_damaged_manifest_or_part_refuses_append_in_one_line_and_leaves_out_as_it_was(
    tmp_path, small_out, damage, why
):
    """``ingest --append`` into an OUT whose manifest.json is damaged (not JSON, wrong types) or whose
    Parquet part is cut: one line naming the file, why and what to do, exit 1, OUT as it was and no
    temporary folder left beside it (before: JSONDecodeError or AttributeError traceback)."""
    out = _copy(small_out, tmp_path / "out")
    (out / "manifest.json").write_text(damage)
    more = tmp_path / "more.log"
    more.write_text(ROUTER.replace("gnt-1", "gnt-2"))
    got = cli("ingest", str(more), "--append", "-o", str(out))
    assert got.returncode == 1, got.stderr
    assert got.stderr == (
        f"logcorr: {out}/manifest.json: damaged: {why}: ingest the inputs again without --append (OUT is then"
        " written anew)\n"
    )
    assert (out / "manifest.json").read_text() == damage
    assert sorted(p.name for p in tmp_path.iterdir()) == ["more.log", "out"]
    # a cut part, the manifest whole
    (out / "manifest.json").write_text((small_out / "manifest.json").read_text())
    part = sorted((out / "batches").glob("*/*.parquet"))[0]
    part.write_bytes(part.read_bytes()[:-10])
    got = cli("ingest", str(more), "--append", "-o", str(out))
    assert (got.returncode, got.stderr) == (
        1,
        f"logcorr: {part}: damaged: a Parquet file begins and ends with PAR1,"
        " this one does not (cut short?): ingest its inputs again into a new folder (OUT/manifest.json lists them)\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["more.log", "out"]


def test_f17_an_out_the_user_cannot_read_is_one_line_and_exit_1_in_every_command(
    tmp_path, small_out, monkeypatch
):
    """An OUT this user may not read (another user's, mode 700): 'permission denied' in one line naming
    OUT, exit 1 as docs/reliability.md says, in every command and in ingest (before: typer's usage error
    'is not readable', exit 2). Root reads anything, so the test denies through os.access."""
    real = os.access

    def access(path, mode, *a, **k):
        return False if Path(path) == small_out else real(path, mode, *a, **k)

    monkeypatch.setattr(os, "access", access)
    said = f"logcorr: {small_out}: permission denied: this user cannot read OUT (run as its owner, or give another folder)\n"
    for args in (["query", "SELECT 1"], ["report"], ["timeline"], ["database"], ["show", "1"], ["export"]):
        got = CliRunner().invoke(app, [*args, "-d", str(small_out)])
        assert (got.exit_code, got.output) == (1, said), args
    router = tmp_path / "router.log"
    router.write_text(ROUTER)
    got = CliRunner().invoke(app, ["ingest", str(router), "--append", "-o", str(small_out)])
    assert (got.exit_code, got.output) == (1, said)


def test_f18_a_file_given_again_through_a_hard_link_is_read_once(tmp_path):
    """Two names of one file (a hard link: the same device and inode) in one ingest are one input, read
    once and said so ('given 2 times: read once'), as for a symlink or ``./x``; before, the hard link was
    read again and its lines dropped only as a word-for-word copy."""
    router = tmp_path / "router.log"
    router.write_text(ROUTER + ROUTER.replace("gnt-1", "gnt-2"))
    os.link(router, tmp_path / "hl.log")
    got = cli("ingest", str(router), str(tmp_path / "hl.log"), "-o", str(tmp_path / "out"))
    assert got.returncode == 0, got.stderr
    assert f"  {router} [text]: 2 records\n    given 2 times: read once\n" in got.stdout
    assert "hl.log" not in got.stdout
    with duckdb.connect() as con:
        rows = con.execute(
            f"SELECT source, count(*) FROM '{tmp_path}/out/events/**/*.parquet' GROUP BY 1"
        ).fetchall()
    assert rows == [(str(router), 2)]


def _hostile_capture(path: Path) -> None:
    import json

    entry = {
        "__REALTIME_TIMESTAMP": "1761774000000000",
        "_BOOT_ID": "b" * 32,
        "_PID": "7",
        "PRIORITY": "3",
        "_SYSTEMD_UNIT": "sglang-decode.service",
        "MESSAGE": "Traceback error \u009b31m red \u202egnp.exe",
    }
    path.write_text(json.dumps(entry) + "\n")


def test_f19_json_output_escapes_c1_controls_and_bidi_marks_and_means_the_same(tmp_path):
    """``report --format json`` and ``query -f json`` write C1 controls (U+009B is CSI) and bidi overrides
    (U+202E) from log data as JSON escapes: nothing acts on a terminal, and the JSON reads back to the
    same text (before: written raw)."""
    import json

    capture = tmp_path / "c.json"
    _hostile_capture(capture)
    out = tmp_path / "out"
    assert cli("ingest", str(capture), "-o", str(out)).returncode == 0
    for args in (["report", "--format", "json"], ["query", "SELECT message FROM events", "-f", "json"]):
        got = cli(*args, "-d", str(out))
        assert got.returncode == 0, got.stderr
        assert "\u009b" not in got.stdout and "\u202e" not in got.stdout, args
        assert "\\u009b31m red \\u202egnp.exe" in got.stdout, args
    rows = json.loads(got.stdout)
    assert rows == [{"message": "Traceback error \u009b31m red \u202egnp.exe"}]


def test_f20_a_bad_stream_cap_is_one_line_naming_the_variable_before_anything_is_read(tmp_path):
    """``$LOGCORR_STREAM_CAP`` that is no size: one line naming the variable, its value and what to give,
    exit 1, nothing written (before: a ValueError in the input's errors, 'nothing could be read')."""
    router = tmp_path / "router.log"
    router.write_text(ROUTER)
    got = cli("ingest", str(router), "-o", str(tmp_path / "out"), env={"LOGCORR_STREAM_CAP": "lots"})
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == (
        "logcorr: $LOGCORR_STREAM_CAP='lots': not a size; give bytes, with K, M or G if you like (8G), or unset it\n"
    )
    assert not (tmp_path / "out").exists()


def test_f21_a_negative_context_is_a_usage_error_not_a_missing_record(small_out):
    """``show -C -1`` is refused as a usage error naming -C (exit 2), never 'no record with event_id'
    for a record that exists (which -C 0 shows alone)."""
    with duckdb.connect() as con:
        event_id, message = con.execute(
            f"SELECT event_id, message FROM '{small_out}/events/**/*.parquet' ORDER BY event_id LIMIT 1"
        ).fetchone()
    got = CliRunner().invoke(app, ["show", str(event_id), "-d", str(small_out), "-C", "-1"])
    assert got.exit_code == 2 and "Invalid value for '-C' / '--context'" in got.output, got.output
    assert "no record" not in got.output
    alone = CliRunner().invoke(app, ["show", str(event_id), "-d", str(small_out), "-C", "0"])
    assert alone.exit_code == 0, alone.output
    assert [line for line in alone.output.splitlines() if line.startswith("> 2025")] == [
        line for line in alone.output.splitlines() if line.startswith(">") and f"event {event_id}" in line
    ]
    assert message in alone.output


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_f22_query_streams_csv_and_json_in_batches_and_gives_the_same_text(small_out, fmt, monkeypatch):
    """``query -f csv|json`` renders the result batch by batch as DuckDB produces it (memory bounded by
    the batch, not the row count: by hand, all 1.5 M events of an OUT as CSV peaked at 0.29 GB, 3.7 GB
    before), and the text is the same as rendered whole; --limit still counts the rows it leaves out."""
    from logcorr.analysis import saved

    sql = "SELECT event_id, ts, message FROM events ORDER BY event_id"
    stream = saved.QueryStream(small_out, sql, fmt=fmt, batch_rows=7)
    pieces = list(stream)
    rows = 41  # 40 batch lines and a router request
    assert len(pieces) == 2 + -(-rows // 7) - (fmt == "csv")  # the head, a piece per batch, json's end
    whole, note = saved.render_query(small_out, sql, fmt=fmt)
    assert "".join(pieces) == whole + "\n" and note is None and stream.note is None
    limited = saved.QueryStream(small_out, sql, fmt=fmt, batch_rows=7, limit=10)
    text = "".join(limited)
    assert text == saved.render_query(small_out, sql, fmt=fmt, limit=10)[0] + "\n"
    assert limited.note == "(31 more row(s) not shown: --limit 10)"
    # the CLI streams: it never asks for the whole frame
    monkeypatch.setattr(saved, "render_query", None)
    got = CliRunner().invoke(app, ["query", sql, "-d", str(small_out), "-f", fmt, "-n", "3"])
    assert got.exit_code == 0, got.output
    assert got.output.endswith("(38 more row(s) not shown: --limit 3)\n")


def test_f23_a_json_entry_with_a_null_message_and_no_cursor_is_whole_not_broken(tmp_path):
    """A ``-o json`` entry whose MESSAGE is null (and that holds no cursor, as captures of other tools
    write) is a whole entry: its fields read (time, unit, pid), its text empty (issue 47: the entry
    logged no text) and no error saying the line is no whole JSON object; a line cut
    in half still is."""
    import json

    base = {"_BOOT_ID": "b" * 32, "_PID": "7", "_SYSTEMD_UNIT": "sglang-decode.service"}
    null = json.dumps({"__REALTIME_TIMESTAMP": "1761774001000000", **base, "MESSAGE": None})
    capture = tmp_path / "c.json"
    capture.write_text(
        json.dumps({"__REALTIME_TIMESTAMP": "1761774000000000", **base, "MESSAGE": "plain"}) + "\n"
        + null + "\n" + '{"MESSAGE": "cut'[:14] + "\n"
    )  # fmt: skip
    out = tmp_path / "out"
    got = cli("ingest", str(capture), "-o", str(out))
    assert got.returncode == 0, got.stderr
    with duckdb.connect() as con:
        rows = con.execute(
            f"SELECT epoch_us(ts), unit, pid, message FROM '{out}/events/**/*.parquet' ORDER BY source_pos"
        ).fetchall()
        errors = con.execute(f"SELECT errors FROM '{out}/sources/**/*.parquet'").fetchone()[0]
    assert rows[:2] == [
        (1761774000000000, "sglang-decode.service", 7, "plain"),
        (1761774001000000, "sglang-decode.service", 7, ""),
    ]
    assert errors == f"{capture} at line 3: not a whole JSON object"
