"""Issue 46, a newcomer's first hour (/work/shared/research/newcomer_trial.md): items 4 (collect on a
wedged host), 7 (small traps) and 8 (many hosts' bare journal files), each reproduced and its fix
asserted."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logcorr.cli import app
from logcorr.ingest import ingest
from logcorr.store import output
from tests.conftest import ROOT, need_journalctl, sql

run = CliRunner().invoke

BATCH = "[2025-10-29 21:25:0{s} TP0] Prefill batch, #new-seq: 1, #new-token: 5, #prealloc-req: 0\n"


def write_log(path: Path, lines: int = 3) -> Path:
    path.write_text("".join(BATCH.format(s=s) for s in range(lines)))
    return path


@pytest.fixture
def small_out(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out)
    return out


# --- item 7: small traps -----------------------------------------------------------------------------


def test_f21_timeline_refuses_a_file_name_it_would_not_write(small_out: Path, tmp_path: Path):
    accepted = (
        "-o names a .html or .htm file (the page), or a .png or .svg file (its first view as a picture)"
    )
    jpg = run(app, ["timeline", "-d", str(small_out), "-o", str(tmp_path / "x.jpg")])
    assert jpg.exit_code == 1 and f"logcorr: {tmp_path / 'x.jpg'}: {accepted}" in jpg.output
    assert not (tmp_path / "x.jpg").exists()  # was: 'wrote x.jpg', an HTML page
    clash = run(app, ["timeline", "-d", str(small_out), "-f", "png", "-o", str(tmp_path / "x.html")])
    assert clash.exit_code == 1 and f"{accepted}; --format png writes a .png file" in clash.output
    htm = run(app, ["timeline", "-d", str(small_out), "-o", str(tmp_path / "x.HTM")])
    assert htm.exit_code == 0, htm.output
    assert (tmp_path / "x.HTM").read_text().lstrip().lower().startswith("<!doctype html")


def locks(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob(".*lock*"))


def test_b7_no_lock_file_is_left_beside_out(tmp_path: Path):
    log = write_log(tmp_path / "a.log")
    assert run(app, ["ingest", str(log), "-o", str(tmp_path / "incident")]).exit_code == 0
    assert run(app, ["database", "-d", str(tmp_path / "incident")]).exit_code == 0
    missing = run(app, ["ingest", str(tmp_path / "jornal"), "-o", str(tmp_path / "m1")])  # F1
    assert missing.exit_code == 1 and "nothing could be read" in missing.output
    (tmp_path / "notmine").mkdir()
    (tmp_path / "notmine" / "x").write_text("x")
    refused = run(app, ["ingest", str(log), "-o", str(tmp_path / "notmine")])
    assert refused.exit_code == 1 and "not a logcorr output folder" in refused.output
    assert locks(tmp_path) == []  # was: .incident.lock, .m1.lock, .notmine.lock
    with output.locked(tmp_path / "incident"):  # while a run holds OUT, its lock names the run
        assert (tmp_path / ".incident.lock").read_text() == f"{os.getpid()}\n"
    assert locks(tmp_path) == []


def test_b7_a_lock_file_removed_after_it_was_opened_is_not_the_lock(tmp_path: Path):
    """A run that opened the lock file just before its holder removed it must not lock that removed
    file (a third run could then lock a new one beside it): it locks the file at the path."""
    out = tmp_path / "out"
    path = tmp_path / ".out.lock"
    path.write_text("")
    real_open = output.os.open
    opened = []

    def open_then_replaced(p, *a):
        fd = real_open(p, *a)
        if not opened:  # the holder removes the file and another run makes a new one
            opened.append(fd)
            Path(p).unlink()
            Path(p).write_text("")
        return fd

    output.os.open = open_then_replaced
    try:
        fd = output._take_lock(out, path)
    finally:
        output.os.open = real_open
    assert output.os.path.samestat(output.os.fstat(fd), path.stat())
    output.os.close(fd)


def test_g1_progress_says_how_far_how_fast_and_each_writing_step(tmp_path: Path, monkeypatch):
    from logcorr import ingest as ingest_mod
    from logcorr.inputs.source import SourceReport
    from logcorr.pipeline.notes import progress_line

    report = SourceReport("big.export", "export", bytes=40_000_000, records=17_878)
    assert (
        progress_line(Path("big.export"), report, 72_000_000, 4.0)
        == "big.export: 17,878 records, 40 of 72 MB (56%), 10.0 MB/s, about 3 s left"
    )
    assert progress_line(Path("j"), report, None, 4.0) == "j: 17,878 records, 40 MB read, 10.0 MB/s"
    monkeypatch.setattr(ingest_mod, "PROGRESS_FROM", 0)  # every input is long
    lines: list[str] = []
    out = tmp_path / "out"
    ingest([write_log(tmp_path / "a.log")], out, progress=lines.append)
    log = tmp_path / "a.log"
    size = log.stat().st_size
    assert re.fullmatch(rf"{log}: 3 records, 0 of 0 MB \(100%\), [\d.]+ MB/s, about 0 s left", lines[0])
    assert size > 0 and lines[1:] == [
        f"writing {out}: rooms, aborts, processes, sources, config",
        f"writing {out}: the Parquet tables' footers and manifest.json",
        f"writing {out}/logcorr.duckdb (views over the tables)",
    ]


@pytest.mark.parametrize(
    ("command", "usage", "argument"),
    [
        ("ingest", "Usage: logcorr ingest [OPTIONS] PATH...", "PATH..."),
        ("show", "Usage: logcorr show [OPTIONS] EVENT_ID", "EVENT_ID"),
        ("query", "Usage: logcorr query [OPTIONS] [NAME_OR_SQL]", "NAME_OR_SQL"),
        ("tables", "Usage: logcorr tables [OPTIONS] [NAME...]", "NAME..."),
    ],
)
def test_g4_help_names_arguments_in_words_not_python_types(command, usage, argument):
    text = run(app, [command, "-h"], prog_name="logcorr", env={"COLUMNS": "200"}).output
    assert text.startswith(usage + "\n")
    assert re.search(rf"(?m)^Arguments:\n  {re.escape(argument)}  \S", text)
    assert not re.search(r"<(list\[|int>|str>|Path>)|\{", text)


def test_a1_the_readme_installs_into_a_venv_first():
    readme = (ROOT / "README.md").read_text()
    quick = re.search(r"## Quick start\n.*?```sh\n(.*?)\n```", readme, re.S).group(1).splitlines()
    assert quick[0] == "python3 -m venv .venv && . .venv/bin/activate"
    assert quick[1].startswith("pip install -e . && logcorr ingest sample_logs/journal ")
    assert readme.index(". .venv/bin/activate") < readme.index("pip install")


# --- item 8: many hosts' bare journal files ---------------------------------------------------------

JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")


def test_a_bare_journal_file_is_named_after_its_host(tmp_path: Path):
    """A .journal file given by name (format not known before it is sniffed) keeps its _HOSTNAME out
    of its first 64 KiB, past the hash tables: it was named logs-<digest of 'system.journal'>, the
    same for every node's system.journal."""
    from logcorr.inputs.paths import discover, hosts_in
    from logcorr.inputs.source import ReadOptions
    from logcorr.pipeline.plan import default_origin

    need_journalctl()
    (node1,) = (ROOT / "sample_logs" / "journal").glob("*/system@*.journal")
    bare = tmp_path / "n1" / "system.journal"
    bare.parent.mkdir()
    shutil.copyfile(node1, bare)
    inputs = discover(bare, ReadOptions())
    assert inputs == [(bare, "?")]
    assert hosts_in(bare, "?") == {"gpu-node-1"}
    assert default_origin(inputs, tmp_path / "out", False) == "gpu-node-1"


def _export(host: str, unit: str) -> str:
    at = 1761773100_000_000  # 2025-10-29 21:25:00 UTC
    fields = {
        "__REALTIME_TIMESTAMP": str(at),
        "__MONOTONIC_TIMESTAMP": "1000",
        "_BOOT_ID": "d81e5a3c6f0b4b2a9e7c1f4d8a2b6c3e",
        "_MACHINE_ID": "4c2f8e1a9b7d4e6f8a3c5b1d2e9f0a7c",
        "_HOSTNAME": host,
        "_PID": "3371",
        "_SYSTEMD_UNIT": unit,
        "MESSAGE": "[2025-10-29 21:25:00 TP0] Decode batch, #running-req: 4, #token: 9",
    }
    return "".join(f"{k}={v}\n" for k, v in fields.items()) + "\n"


def test_two_nodes_system_journal_files_ingested_one_by_one_combine(tmp_path: Path):
    if not JOURNAL_REMOTE.exists():
        pytest.skip("systemd-journal-remote not installed (apt-get install systemd-journal-remote)")
    need_journalctl()
    for host in ("gpu-node-1", "gpu-node-2"):
        (tmp_path / f"{host}.export").write_text(_export(host, "sglang-decode.service"))
        (tmp_path / host).mkdir()
        journal = tmp_path / host / "system.journal"
        cmd = [
            str(JOURNAL_REMOTE),
            "--split-mode=none",
            f"--output={journal}",
            str(tmp_path / f"{host}.export"),
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        got = run(app, ["ingest", str(journal), "-o", str(tmp_path / f"{host}-out")])
        assert got.exit_code == 0, got.output
        assert [p.name for p in (tmp_path / f"{host}-out" / "events").iterdir()] == [f"origin={host}"]
    all_out = tmp_path / "all"
    for host in ("gpu-node-1", "gpu-node-2"):
        shutil.copytree(tmp_path / f"{host}-out", all_out, dirs_exist_ok=True)  # docs/many_hosts.md's cp -r
    combined = run(app, ["database", "-d", str(all_out)])
    assert combined.exit_code == 0, combined.output  # was: refused, 'two separate ingests of origin=logs-…'
    assert sql(all_out, "SELECT host, count(*) FROM events GROUP BY 1 ORDER BY 1") == [
        ("gpu-node-1", 1),
        ("gpu-node-2", 1),
    ]


def test_a_role_for_a_unit_no_input_has_is_warned_of(tmp_path: Path):
    capture = tmp_path / "day.export"
    capture.write_text(_export("gpu-node-1", "sglang-decode.service") + _export("gpu-node-1", "cron.service"))
    got = run(app, ["ingest", str(capture), "--role", "llm-b=decode", "-o", str(tmp_path / "o")])
    assert got.exit_code == 0
    assert got.stderr == (
        "logcorr: warning: --role llm-b=decode: no input has a unit llm-b or llm-b.service"
        " (the units seen: cron.service, sglang-decode.service)\n"
    )
    used = run(app, ["ingest", str(capture), "--role", "sglang-decode=prefill", "-o", str(tmp_path / "p")])
    assert used.exit_code == 0 and used.stderr == ""
    log = write_log(tmp_path / "a.log")  # a plain log names no unit
    bare = run(app, ["ingest", str(log), "--role", "llm-b.service=decode", "-o", str(tmp_path / "q")])
    assert bare.exit_code == 0
    assert bare.stderr == (
        "logcorr: warning: --role llm-b.service=decode: no input has a unit llm-b.service (the units seen: none)\n"
    )


# --- item 4: collect on a wedged host ----------------------------------------------------------------

PYSPY_BACKTRACE = """Error: Failed to find python version from target process

Stack backtrace:
   0: anyhow::error::<impl anyhow::Error>::msg
   1: py_spy::python_spy::PythonSpy::new
  10: main
"""


def fake_tools(folder: Path) -> Path:
    """py-spy failing as it does under RUST_BACKTRACE=1, a journalctl with nothing to give (journald
    not persistent), a dmesg with one line: executables in ``folder``."""
    folder.mkdir()
    (folder / "stderr.txt").write_text(PYSPY_BACKTRACE)
    tools = {
        "py-spy": f"cat {folder / 'stderr.txt'} >&2; exit 1",
        "journalctl": "exit 0",
        "dmesg": "echo '2025-10-29T21:40:00,000000+00:00 eth0: link up'",
    }
    for name, body in tools.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return folder


def fake_proc(folder: Path) -> Path:
    """A process table with one scheduler, ``sglang::scheduler_TP0`` of pid 600 in a systemd unit."""
    (folder / "600").mkdir(parents=True)
    (folder / "600" / "cmdline").write_bytes(b"sglang::scheduler_TP0\0")
    (folder / "600" / "cgroup").write_text("0::/system.slice/sglang-decode.service\n")
    return folder


def test_e2_e5_collect_on_a_host_without_a_journal_says_exactly_what_it_got(tmp_path: Path, monkeypatch):
    from logcorr.collect import collect, summary

    bin_ = fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    monkeypatch.setenv("RUST_BACKTRACE", "1")
    bundle = tmp_path / "bundle-vm"
    manifest = collect(bundle, urls=[], rounds=1, budget="20s", proc=fake_proc(tmp_path / "proc"))
    steps = {a["kind"]: a for a in manifest["artifacts"]}
    assert set(steps) >= {"pyspy", "journal", "kernel"}
    for a in manifest["artifacts"]:  # every artifact: status, duration, bytes, error
        assert {"status", "duration_ms", "bytes", "error"} <= a.keys(), a
    # E5: py-spy's own error line, not the backtrace's last
    assert steps["pyspy"]["error"] == "Error: Failed to find python version from target process"
    assert steps["pyspy"]["status"] == 1 and steps["pyspy"]["file"] is None
    # E2: an empty journal is no success, and the manifest names no file that was not written
    journal = steps["journal"]
    assert journal["status"] == 0 and journal["bytes"] == 0 and journal["file"] is None
    assert journal["error"].startswith("empty: journalctl gave no entry since ")
    assert journal["error"].endswith(" of sglang-decode.service")
    assert not (bundle / "journal.export").exists()
    assert steps["kernel"]["status"] == 0 and steps["kernel"]["file"] == "dmesg.txt"
    written = [a["file"] for a in manifest["artifacts"] if a.get("file")]
    assert written and all((bundle / f).is_file() for f in written)
    text = summary(bundle, manifest)
    assert "steps: pyspy 1 failed, journal 1 failed, kernel 1 ok" in text
    assert "  pyspy sglang::scheduler_TP0: Error: Failed to find python version from target process" in text
    assert "10: main" not in text and "journal 1 ok" not in text


def test_e3_a_bundle_without_sglang_data_is_reported_as_such(tmp_path: Path, monkeypatch):
    from logcorr.collect import collect
    from logcorr.render.report import report

    bin_ = fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    bundle = tmp_path / "bundle-vm"
    (tmp_path / "noproc").mkdir()  # no SGLang process
    collect(bundle, urls=[], rounds=1, budget="20s", proc=tmp_path / "noproc")
    got = run(app, ["ingest", str(bundle), "-o", str(tmp_path / "vm-out")])
    assert got.exit_code == 0, got.output
    assert (
        f"  skipped: {bundle / 'dmesg.txt'}: the kernel's ring buffer (dmesg), kept in the bundle"
        in got.stdout
    )
    text = report(tmp_path / "vm-out")
    assert "the data shows no failure" not in text
    assert "**What happened**: cannot be told: logcorr read no record as an SGLang engine" in text
