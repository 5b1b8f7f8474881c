"""logcorr ingest end to end: the sample incident's binary journal, its captures, the real cases."""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from logcorr.analysis.saved import query
from logcorr.cli import app
from logcorr.ingest import NothingReadError, OptionError, first_event_id, ingest
from logcorr.inputs.journal import _unit_share, journalctl_window
from logcorr.inputs.paths import discover
from logcorr.inputs.source import InputError, ReadOptions
from tests.conftest import SAMPLE, ingested, need_cases, need_journalctl, sample_with_dumps

ENGINE_UNITS = ("sglang-prefill.service", "sglang-decode.service", "sglang-router.service")


def journal_entries(*units: str) -> int:
    args = ["journalctl", "--directory", str(SAMPLE / "journal"), "-o", "export", "-a"]
    for u in units:
        args += ["--unit", u]
    out = subprocess.run(args, capture_output=True, check=True).stdout
    return out.count(b"\n__CURSOR=") + out.startswith(b"__CURSOR=")


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory) -> Path:
    need_journalctl()
    out = tmp_path_factory.mktemp("sample") / "out"
    result = CliRunner().invoke(app, ["ingest", str(SAMPLE / "journal"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    # read straight through (the engines' units hold nearly every entry): what was skipped is counted;
    # init.scope is not among them, its messages about the engines' units are kept
    assert (
        "units skipped: (no unit) (2 entries), cron.service (6 entries), ssh.service (2 entries)"
        in result.output
    )
    return out


def events(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "events")


def test_every_entry_of_the_chosen_units_and_nothing_else(sample_out):
    ev = events(sample_out)
    assert int(ev["n_lines"].sum()) == journal_entries(*ENGINE_UNITS)
    assert set(ev["unit"].unique()) == set(ENGINE_UNITS)
    assert not ev["message"].str.contains("sshd|CRON|pam_unix").any()


def test_both_engines_with_their_four_ranks(sample_out):
    ev = events(sample_out)
    for role in ("prefill", "decode"):
        ranks = (
            ev.filter((pl.col("role") == role) & pl.col("tp_rank").is_not_null())["tp_rank"].unique().sort()
        )
        assert ranks.to_list() == [0, 1, 2, 3], role
    assert ev.filter(pl.col("unit") == "sglang-router.service")["role"].unique().to_list() == ["router"]


def test_ts_increases_per_source(sample_out):
    ev = events(sample_out).sort("event_id")
    assert ev["ts"].is_sorted()
    first = first_event_id(
        json.loads((sample_out / "manifest.json").read_text())["origin"]
    )  # the data's host
    assert ev["event_id"].to_list() == list(range(first, first + ev.height))


def test_each_assertion_traceback_is_one_record(sample_out):
    ev = events(sample_out)
    tb = ev.filter(pl.col("message").str.contains("assert room in self.transfer_infos", literal=True))
    assert tb.height == 3
    assert sorted(tb["tp_rank"].to_list()) == [0, 1, 3]
    assert (tb["role"] == "prefill").all()
    assert (tb["n_lines"] > 3).all()
    assert tb["message"].str.starts_with("[2025-10-29 ").all()
    assert tb["message"].str.ends_with("AssertionError").all()


def test_sources_and_manifest_count_what_was_written(sample_out):
    src = pl.read_parquet(sample_out / "sources")
    assert src.height == 1
    assert src["records"][0] == events(sample_out).height
    assert src["format"][0] == "journal-dir"
    manifest = json.loads((sample_out / "manifest.json").read_text())
    assert manifest["rows"]["events"] == events(sample_out).height
    assert manifest["inputs"][0]["records"] == events(sample_out).height


def test_export_and_json_captures_give_the_same_events(tmp_path, sample_out):
    export = subprocess.run(
        ["journalctl", "--directory", str(SAMPLE / "journal"), "-o", "export", "-a"],
        capture_output=True,
        check=True,
    ).stdout
    (tmp_path / "capture.export").write_bytes(export)
    cols = ["ts", "host", "unit", "role", "pid", "tp_rank", "kind", "message", "n_lines", "source_pos"]
    from_journal = events(sample_out).select(cols)
    for name in ("capture.export", "journal.json"):
        path = tmp_path / name if name.endswith("export") else SAMPLE / name
        out = tmp_path / f"out-{name}"
        result = ingest([path], out)
        # the same units chosen as from the journal itself: sshd, cron and the kernel skipped
        assert events(out).select(cols).equals(from_journal), name
        notes = result.reports[0].notes
        assert notes[0].startswith("units chosen: sglang-decode.service (decode), sglang-prefill.service")
        assert notes[1].startswith(
            "units skipped: (no unit) (2 entries), cron.service (6 entries), ssh.service (2 entries)"
        )
        # the journal, read straight through, counts what it skipped the same way
        from_dir = json.loads((sample_out / "manifest.json").read_text())["inputs"][0]["notes"]
        assert notes[0] in from_dir and notes[1] in from_dir
        every = ingest([path], tmp_path / f"all-{name}", ReadOptions(all_units=True))
        assert every.rows["events"] == from_journal.height + 10


def test_a_capture_read_in_small_blocks_is_enriched_in_joined_chunks(tmp_path, monkeypatch):
    # issue 49: every stage after reading pays a fixed cost per chunk, so the reader's blocks (but the
    # first) are joined up to BATCH_ROWS records before they are enriched; the tables do not depend on the blocks
    from logcorr.inputs import text
    from logcorr.pipeline import enrich
    from logcorr.pipeline.read import BATCH_ROWS

    def room_errors(out: Path) -> list[tuple]:
        te = pl.read_parquet(out / "transfer_errors").filter(
            (pl.col("bootstrap_room") == 4384674655194745451)
            & (pl.col("error_kind") == "assert_transfer_infos")
        )
        return sorted(te.select("role", "tp_rank").unique().rows())

    ingest([SAMPLE / "journal.json"], tmp_path / "one-block")
    whole = events(tmp_path / "one-block")
    calls = []
    call = enrich.Enricher.__call__

    def counted(self, recs, *a):
        calls.append(recs.height)
        return call(self, recs, *a)

    monkeypatch.setattr(enrich.Enricher, "__call__", counted)
    monkeypatch.setattr(text, "CHUNK_BYTES", 1 << 20)  # the 10 MB capture in 10 blocks
    result = ingest([SAMPLE / "journal.json"], tmp_path / "blocks")
    # the first block goes on alone (the later stages start while the second is read), the nine
    # others joined; before: one call per 1 MB block, ten
    assert whole.height == 5_964 and len(calls) == 2 and sum(calls) == 5_964
    assert 400 < calls[0] < 1_000  # one 1 MB block of a capture of about 1.7 KB an entry
    assert BATCH_ROWS >= 5_964
    assert events(tmp_path / "blocks").equals(whole)
    assert result.rows == json.loads((tmp_path / "one-block" / "manifest.json").read_text())["rows"]
    assert room_errors(tmp_path / "blocks") == [("prefill", 0), ("prefill", 1), ("prefill", 3)]


def test_a_journal_and_captures_of_it_are_read_once(tmp_path, sample_out):
    # journal.export is the export the sample journal was built from (systemd-journal-remote gave
    # its entries new cursors); journal.json is journalctl -o json of the journal
    out = tmp_path / "out"
    result = ingest([SAMPLE / "journal", SAMPLE / "journal.export", SAMPLE / "journal.json"], out)
    journal, export, capture = result.reports
    assert journal.records == events(sample_out).height == 5964
    assert export.records == capture.records == 0
    # 6,168 entries (README: the entries of the two engines, the router and init.scope): the 5,964
    # records before re-joining the lines of tracebacks and dumps
    skipped = (
        f"6,168 entries already read from {SAMPLE / 'journal'} (same time, boot, pid and message): skipped"
    )
    assert skipped in export.notes and skipped in capture.notes
    assert events(out).height == 5964 and result.rows["batches"] == 2724
    assert not any(r.unread for r in result.reports)


def test_a_partial_capture_given_first_leaves_the_journal_s_records_whole(tmp_path, sample_out):
    # a capture starting inside prefill TP0's assertion traceback, given before the journal: read
    # first, it took the traceback's last lines and left its head alone (the report lost TP0's
    # assertion). Journals are read first; the same path given three times is read once.
    need_journalctl()
    tail = subprocess.run(
        ["journalctl", "--directory", str(SAMPLE / "journal"), "--since", "2025-10-29 21:34:43.504245 UTC"]
        + ["-o", "export"],
        capture_output=True,
        check=True,
    ).stdout
    (tmp_path / "tail.export").write_bytes(tail)
    given = [tmp_path / "tail.export", SAMPLE / "journal", SAMPLE / "journal", SAMPLE / "journal/"]
    result = ingest(given, tmp_path / "out")
    assert [r.source for r in result.reports] == [str(SAMPLE / "journal"), str(tmp_path / "tail.export")]
    assert "given 3 times: read once" in result.reports[0].notes and result.reports[1].records == 0
    cols = ["ts", "pid", "kind", "message", "n_lines"]
    assert events(tmp_path / "out").select(cols).equals(events(sample_out).select(cols))
    ranks = query(tmp_path / "out", "abort_to_assert")["assert_tp_ranks"].unique().to_list()
    assert ranks == [[0, 1, 3]]


def test_a_capture_is_read_where_it_adds_entries(tmp_path):
    # a capture that overlaps the journal for one unit and adds another: only the new unit's entries
    need_journalctl()
    out = tmp_path / "out"
    ingest([SAMPLE / "journal"], tmp_path / "decode", ReadOptions(units=("sglang-decode.service",)))
    ingest([SAMPLE / "journal.json"], tmp_path / "json")
    decode_export = subprocess.run(
        ["journalctl", "--directory", str(SAMPLE / "journal"), "-o", "export", "-u", "sglang-decode.service"],
        capture_output=True,
        check=True,
    ).stdout
    (tmp_path / "decode.export").write_bytes(decode_export)
    result = ingest([tmp_path / "decode.export", SAMPLE / "journal.json"], out)
    first, second = result.reports
    assert first.records == events(tmp_path / "decode").height
    assert first.records + second.records == events(tmp_path / "json").height
    ev = events(out)
    assert ev.group_by("unit", "message", "ts").len()["len"].max() == 1  # nothing twice
    decode_entries = journal_entries("sglang-decode.service")
    assert f"{decode_entries:,} entries already read from {tmp_path / 'decode.export'}" in second.notes[-1]


def test_a_plain_log_beside_the_journal_holding_its_lines_is_named(tmp_path):
    # router.log is the router unit's stdout: its lines are in the journal too. An input whose lines
    # are (nearly) all another input's is a copy: read once, and its note says what was skipped.
    result = ingest([SAMPLE / "journal", SAMPLE / "router.log"], tmp_path / "out")
    journal, log = result.reports
    assert log.records == 0
    assert log.notes == [
        f"1,097 of its lines are also in {SAMPLE / 'journal'}, word for word: a copy, skipped (counted once)"
    ]
    assert result.rows["events"] == 5964
    # two copies of one log (a rotated copy beside it) are read once the same way; a dump without a
    # time says what would place it
    (tmp_path / "router.log.1").write_bytes((SAMPLE / "router.log").read_bytes())
    dump = SAMPLE / "pyspy" / "decode_tp0_214010.txt"
    copies = ingest([SAMPLE / "router.log", tmp_path / "router.log.1", dump], tmp_path / "copies")
    assert copies.reports[1].notes == [
        f"1,097 of its lines are also in {SAMPLE / 'router.log'}, word for word: a copy, skipped (counted once)"
    ]
    assert copies.reports[1].records == 0 and copies.reports[0].records == 1097
    assert copies.reports[2].notes == [
        "no time in the dump: give --captured-at (when it was taken) to place it on the timeline"
    ]


def test_a_folder_walk_passes_over_documents_code_and_logcorr_outputs(tmp_path):
    folder = tmp_path / "incident"
    folder.mkdir()
    (folder / "router.log").write_bytes((SAMPLE / "router.log").read_bytes())
    (folder / "NOTES.md").write_text(
        "# what we saw\n[2025-10-29 21:30:00 TP0] Decode batch, #running-req: 1\n"
    )
    (folder / "collect.py").write_text("print('hello')\n")
    ingest([folder / "router.log"], folder / "out")  # an earlier ingest's output inside the folder
    found = dict(discover(folder))
    assert found == {
        folder / "NOTES.md": "skipped",
        folder / "collect.py": "skipped",
        folder / "router.log": "?",
    }
    result = CliRunner().invoke(app, ["ingest", str(folder), "-o", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    assert (
        f"skipped, not logs by their names (name a file to read it): {folder / 'NOTES.md'}, {folder / 'collect.py'}"
        in result.output
    )
    assert events(tmp_path / "again").height == 1097  # router.log alone: no parquet bytes read as text
    (folder / "router.log").unlink()
    nothing = CliRunner().invoke(app, ["ingest", str(folder), "-o", str(tmp_path / "nothing")])
    assert nothing.exit_code == 1
    assert (
        f"{folder / 'NOTES.md'}: a .md file is not a log (name it on the command line to read it)"
        in nothing.output
    )
    named = ingest([folder / "NOTES.md"], tmp_path / "named")  # a file named itself is read
    assert named.rows["batches"] == 1
    with pytest.raises(InputError, match="a logcorr output folder, not logs"):
        discover(folder / "out")


JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
BOOT = "d81e5a3c6f0b4b2a9e7c1f4d8a2b6c3e"


def _entry(i: int, pid: int, unit: str, message: str, **fields: str) -> str:
    head = {
        "__REALTIME_TIMESTAMP": str(1761774887000000 + i * 1000),
        "__MONOTONIC_TIMESTAMP": str(54743262544 + i * 1000),
        "_BOOT_ID": BOOT,
        "_MACHINE_ID": "4c2f8e1a9b7d4e6f8a3c5b1d2e9f0a7c",
        "_HOSTNAME": "gpu-node-1",
        "_PID": str(pid),
        "_UID": "0" if pid < 100 else "998",
        "_SYSTEMD_UNIT": unit,
    }
    return "".join(f"{k}={v}\n" for k, v in {**head, **fields, "MESSAGE": message}.items()) + "\n"


def test_a_journal_read_in_segments_gives_the_stream_one_journalctl_gives(tmp_path, monkeypatch):
    # two hosts' files (split by host), their entries interleaved in time: journalctl merges them, and
    # each segment's journalctl goes on after the last entry read (--after-cursor), so the records, their
    # order, the traceback re-joined across a segment's end and the bytes counted are those of one run
    if not JOURNAL_REMOTE.exists():
        pytest.skip("systemd-journal-remote not installed")
    need_journalctl()
    decode, prefill = "sglang-decode.service", "sglang-prefill.service"
    entries = []
    for i in range(80):
        host, unit, pid = ("gpu-node-1", decode, 3371) if i % 2 else ("gpu-node-2", prefill, 4100)
        message = (
            f"[2025-10-29 21:54:{i % 60:02d} TP{i % 4}] Decode batch, #running-req: {i}, #token: {100 + i}"
        )
        if i in (41, 43, 45):  # a traceback written line by line, one entry per line
            message = {41: "Traceback (most recent call last):", 43: '  File "scheduler.py", line 9, in run',
                       45: "AssertionError: 7230432917548031"}[i]  # fmt: skip
        entries.append((host, _entry(i, pid, unit, message, _HOSTNAME=host)))
    journal = tmp_path / "journal"
    journal.mkdir()
    for host in ("gpu-node-1", "gpu-node-2"):  # a file per host
        capture = tmp_path / f"{host}.export"
        capture.write_text("".join(e for h, e in entries if h == host))
        subprocess.run(
            [str(JOURNAL_REMOTE), "--split-mode=none", f"--output={journal / host}.journal", str(capture)],
            check=True,
            capture_output=True,
        )
    whole = ingest([journal], tmp_path / "whole")
    runs = []
    popen = subprocess.Popen

    def counted(args, *a, **kw):
        runs.append([x for x in args if x.startswith("--after-cursor=")])
        return popen(args, *a, **kw)

    monkeypatch.setattr("logcorr.inputs.journal.SEGMENT_BYTES", 4096)
    monkeypatch.setattr("logcorr.inputs.export.CHUNK_BYTES", 1024)  # journalctl's pipe read 1 KB at a time
    monkeypatch.setattr("logcorr.inputs.journal.subprocess.Popen", counted)
    parts = ingest([journal], tmp_path / "parts")
    after = [r for r in runs if r]
    assert len(after) >= 5 and len({r[0] for r in after}) == len(after)  # each segment goes on further
    columns = ["source_pos", "ts", "host", "unit", "pid", "tp_rank", "kind", "message", "n_lines"]
    one, many = events(whole.out).select(columns), events(parts.out).select(columns)
    assert one.height == many.height == 77  # 80 entries; the traceback's 3 lines joined to the line before
    assert one.equals(many)
    joined = many.filter(pl.col("n_lines") == 4)
    assert (
        joined["message"].item().endswith("AssertionError: 7230432917548031") and joined["pid"].item() == 3371
    )
    assert parts.reports[0].bytes == whole.reports[0].bytes
    assert parts.reports[0].errors == whole.reports[0].errors == []
    # in a window: journalctl takes no --since beside --after-cursor
    window = ReadOptions(since="2025-10-29 21:54:47.010", until="2025-10-29 21:54:47.070")
    monkeypatch.setattr("logcorr.inputs.journal.WINDOW_MARGIN", timedelta(0))
    cut = ingest([journal], tmp_path / "window", window)
    assert cut.reports[0].errors == [] and len([r for r in runs if r]) > len(after)
    kept = events(cut.out).select(columns)
    assert kept.height == 58 and kept.equals(one.slice(10, 58))  # entries 10-70 (ms 10-70; 41, 43, 45 joined)


def test_journal_read_through_or_with_unit_matches_keeps_the_same_entries(tmp_path, monkeypatch):
    # journalctl --unit keeps a unit's coredump (COREDUMP_UNIT, logged by systemd-coredump) and
    # systemd's messages about it (UNIT, pid 1); reading straight through must keep the same
    if not JOURNAL_REMOTE.exists():
        pytest.skip("systemd-journal-remote not installed")
    need_journalctl()
    decode = "sglang-decode.service"
    text = "".join(
        [_entry(i, 3371, decode, f"[2025-10-29 21:54:47 TP0] Decode batch, #running-req: {i}") for i in range(60)]
        + [
            _entry(60, 1, "init.scope", "sglang-decode.service: Main process exited, code=dumped, status=6/ABRT",
                   UNIT=decode),
            _entry(61, 91234, "systemd-coredump@0-91233-0.service",
                   "Process 3371 (python3) of user 998 dumped core.",
                   MESSAGE_ID="fc2e22bc6ee647b6b90729ab34a250b1", COREDUMP_UNIT=decode, _UID="0"),
            _entry(62, 812, "cron.service", "(root) CMD (run-parts /etc/cron.hourly)"),
        ]
    )  # fmt: skip
    capture = tmp_path / "day.export"
    capture.write_text(text)
    journal = tmp_path / "journal"
    journal.mkdir()
    subprocess.run(
        [str(JOURNAL_REMOTE), "--split-mode=none", f"--output={journal / 'remote.journal'}", str(capture)],
        check=True,
        capture_output=True,
    )
    assert _unit_share(journal, [decode], []) == pytest.approx(62 / 63)  # read straight through
    kept = [
        "sglang-decode.service: Main process exited, code=dumped, status=6/ABRT",
        "Process 3371 (python3) of user 998 dumped core.",
    ]
    runs = {"read through": ingest([journal], tmp_path / "through")}
    monkeypatch.setattr("logcorr.inputs.journal.READ_THROUGH_SHARE", 1.01)  # journalctl --unit
    runs["unit matches"] = ingest([journal], tmp_path / "matched")
    runs["export capture"] = ingest([capture], tmp_path / "capture")
    for how, result in runs.items():
        ev = events(result.out).sort("ts")
        assert ev.height == 62, how  # cron's entry left out
        assert ev["message"].tail(2).to_list() == kept, how
        assert ev["unit"].tail(2).to_list() == [decode, "systemd-coredump@0-91233-0.service"], how
    skipped = {
        how: [n for n in r.reports[0].notes if n.startswith("units skipped")] for how, r in runs.items()
    }
    assert (
        skipped["read through"]
        == skipped["export capture"]
        == ["units skipped: cron.service (1 entry) (use --unit or --all-units to read them)"]
    )
    # with journalctl's matches the entries are not seen: the units journalctl -F lists, by name
    assert skipped["unit matches"] == [
        "units skipped: cron.service, init.scope, systemd-coredump@0-91233-0.service "
        "(use --unit or --all-units to read them)"
    ]


def test_capture_units_chosen_by_command_line_and_broken_lines_kept(tmp_path):
    def line(i: int, unit: str | None, cmdline: str, message: str) -> str:
        entry = {
            "__CURSOR": f"s=1;i={i}",
            "__REALTIME_TIMESTAMP": str(1761773687000000 + i),
            "_PID": "40" if unit else "0",
            "_CMDLINE": cmdline,
            "MESSAGE": message,
        }
        if unit:
            entry["_SYSTEMD_UNIT"] = unit
        return json.dumps(entry)

    engine = "/usr/bin/python3 -m sglang.launch_server --disaggregation-mode decode --tp 2"
    capture = tmp_path / "cap.json"
    capture.write_text(
        "\n".join(
            [
                line(
                    1, "inference.service", engine, "[2025-10-29 21:34:47 TP1] Decode batch, #running-req: 3"
                ),
                line(2, "cron.service", "/usr/sbin/cron -f", "(root) CMD (run-parts /etc/cron.hourly)"),
                line(3, None, "", "kernel: NVRM: Xid 79"),
                '{"__CURSOR":"s=1;i=4","MESSAGE":"[2025-10-29 21:34:48 TP0] Decode b',  # cut in half
            ]
        )
        + "\n"
    )
    result = ingest([capture], tmp_path / "out")
    ev = events(tmp_path / "out").sort("source_pos")
    assert ev["source_pos"].to_list() == ["line 4", "s=1;i=1"]
    assert ev.filter(pl.col("unit") == "inference.service")["role"].to_list() == ["decode"]
    assert result.reports[0].notes == [
        "units chosen: inference.service (decode)",
        "units skipped: (no unit) (1 entry), cron.service (1 entry) (use --unit or --all-units to read them)",
    ]


def test_unit_option_and_all_units(tmp_path):
    need_journalctl()
    one = ingest([SAMPLE / "journal"], tmp_path / "one", ReadOptions(units=("sglang-router.service",)))
    assert one.rows["events"] == journal_entries("sglang-router.service")
    every = ingest([SAMPLE / "journal"], tmp_path / "all", ReadOptions(all_units=True))
    ev = events(tmp_path / "all")
    assert {"cron.service", "ssh.service"} <= set(ev["unit"].drop_nulls())
    assert every.rows["events"] > one.rows["events"]


def _unpack(src: Path, into: Path) -> Path:
    out = into / src.name.removesuffix(".xz")
    out.write_bytes(lzma.decompress(src.read_bytes()))
    return out


def test_real_journals_and_a_truncated_one_in_one_call(tmp_path):
    cases = need_cases()
    need_journalctl()
    files = [
        _unpack(cases / "journal" / n, tmp_path)
        for n in ("velociraptor_2004.journal.xz", "velociraptor_2404.journal.xz")
    ]
    bad = _unpack(cases / "journal" / "velociraptor_system.journal.xz", tmp_path)
    result = CliRunner().invoke(app, ["ingest", *map(str, files), str(bad), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output  # written from the two others; the third named
    assert f"written, but 1 input(s) could not be read at all: {bad}" in result.output
    assert (
        "velociraptor_system.journal: journalctl refused it: Failed to open files: No data available"
        in result.output
    )
    src = pl.read_parquet(tmp_path / "out" / "sources").sort("source")
    assert src["records"].to_list() == [3, 3, 0]
    # the same truncated file alone: nothing could be read, non-zero exit, a clear message, no traceback
    alone = CliRunner().invoke(app, ["ingest", str(bad), "-o", str(tmp_path / "bad")])
    assert alone.exit_code == 1
    assert "nothing could be read" in alone.output and "Traceback" not in alone.output
    assert not (tmp_path / "bad").exists()


def test_xz_journal_is_unpacked(tmp_path):
    cases = need_cases()
    need_journalctl()
    result = ingest([cases / "journal" / "velociraptor_2404.journal.xz"], tmp_path / "out")
    assert result.rows["events"] == 3


def test_export_file_with_repeated_binary_field(tmp_path):
    cases = need_cases()
    ingest([cases / "journal" / "systemd_journal-1.export"], tmp_path / "out")
    msg = events(tmp_path / "out")["message"][0]
    assert msg.count("COREDUMP_PROC_CGROUP=") == 2


def test_every_sglang_case_file_keeps_every_line():
    cases = need_cases()
    for path in sorted((cases / "sglang").iterdir()):
        out = ingested(path)  # the file alone, as test_cases_data reads it: shared, read only
        lines = path.read_text(encoding="utf-8", errors="replace").count("\n") + (
            not path.read_text().endswith("\n")
        )
        assert int(events(out)["n_lines"].sum()) == lines, path.name


def test_non_utf8_message_is_kept(tmp_path):
    json_line = '{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1761773687000000","_PID":"7","MESSAGE":[91,50,48,93,32,255,254]}'
    (tmp_path / "cap.json").write_text(json_line + "\n")
    ingest([tmp_path / "cap.json"], tmp_path / "out")
    assert events(tmp_path / "out")["message"].to_list() == ["[20] \ufffd\ufffd"]


def test_nothing_readable_raises_and_leaves_out_alone(tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    with pytest.raises(NothingReadError, match="empty.log: empty file"):
        ingest([tmp_path / "empty.log"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bare_dump_files_take_role_host_and_time_from_the_journal():
    dumps = sorted((SAMPLE / "pyspy").glob("*_214010.txt"))
    caps = pl.read_parquet(sample_with_dumps() / "captures").filter(
        pl.col("source").str.ends_with("_214010.txt")
    )
    main = caps.filter(pl.col("is_main"))
    assert main.height == len(dumps) == 8
    assert set(main["host"]) == {"gpu-node-1"}
    assert main["capture_ts"].dt.to_string("%H:%M:%S").unique().to_list() == ["21:40:10"]
    by_rank = {(r["role"], r["tp_rank"]): r["wait_class"] for r in main.iter_rows(named=True)}
    assert by_rank == {
        **{("prefill", tp): "all_reduce" for tp in range(4)},
        ("decode", 0): "broadcast",
        ("decode", 1): "broadcast",
        ("decode", 2): "all_reduce",
        ("decode", 3): "all_reduce",
    }


def test_outputs_of_two_hosts_combine_in_one_folder(tmp_path):
    """Each host ingests its own journal; copying the OUT folders together gives one data set."""
    need_journalctl()
    from logcorr.analysis.saved import query

    a, b = tmp_path / "node-a", tmp_path / "node-b"
    ingest([SAMPLE / "journal"], a, ReadOptions(units=("sglang-prefill.service",)), origin="gpu-node-1")
    ingest([SAMPLE / "journal"], b, ReadOptions(units=("sglang-decode.service",)), origin="gpu-node-2")
    combined = tmp_path / "combined"
    for out in (a, b):
        subprocess.run(["cp", "-r", f"{out}/.", str(combined)], check=True)
    assert sorted(p.name for p in (combined / "events").iterdir()) == [
        "origin=gpu-node-1",
        "origin=gpu-node-2",
    ]
    ev = pl.read_parquet(combined / "events" / "**" / "*.parquet", hive_partitioning=False)
    assert ev.height == events(a).height + events(b).height
    assert ev["event_id"].n_unique() == ev.height  # ids of the two hosts never collide
    wedge = query(combined, "wedge").to_dicts()
    decode = next(r for r in wedge if r["role"] == "decode")
    assert decode["stopped_ts"].isoformat().startswith("2025-10-29T21:34:47.41")
    assert decode["other_role_continued"]  # prefill's batches, from the other folder, went on


def test_a_folder_with_a_journal_and_other_files_is_read_whole():
    found = dict(discover(SAMPLE))
    assert found[SAMPLE / "journal"] == "journal-dir"  # the machine-id folder's parent, as /var/log/journal
    assert found[SAMPLE / "router.log"] == "?"
    assert found[SAMPLE / "pyspy" / "decode_tp0_214010.txt"] == "?"
    assert not any(
        "4c2f8e1a9b7d4e6f8a3c5b1d2e9f0a7c" in str(p) for p in found
    )  # journal files read by journalctl


def test_empty_tables_have_no_rows(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("[2025-10-29 21:25:13 TP0] Prefill batch, #new-seq: 1, #new-token: 4\n")
    ingest([log], tmp_path / "out")
    assert pl.read_parquet(tmp_path / "out" / "watchdogs").height == 0
    assert pl.read_parquet(tmp_path / "out" / "batches").height == 1


def test_captured_at_without_a_bare_dump_is_said_unused(tmp_path):
    args = [
        "ingest",
        str(SAMPLE / "router.log"),
        "--captured-at",
        "2025-10-29 21:40:10",
        "-o",
        str(tmp_path / "o"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0
    assert (
        "  --captured-at not used: no bare py-spy dump file nor Prometheus scrape among the inputs"
        in result.output
    )


def test_output_below_a_file_and_a_window_backwards_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    log = str(SAMPLE / "router.log")
    below = CliRunner().invoke(app, ["ingest", log, "-o", str(tmp_path / "notes.txt" / "out")])
    assert below.exit_code == 1 and isinstance(below.exception, SystemExit)
    assert (
        f"{tmp_path / 'notes.txt' / 'out'}: {tmp_path / 'notes.txt'} is a file, not a folder" in below.output
    )
    window = ["--since", "2025-10-29T21:41", "--until", "2025-10-29T21:34"]
    backwards = CliRunner().invoke(app, ["ingest", log, *window, "-o", str(tmp_path / "out")])
    assert backwards.exit_code == 1
    assert "--until 2025-10-29T21:34 is before --since 2025-10-29T21:41" in backwards.output
    assert not (tmp_path / "out").exists()
    later = CliRunner().invoke(app, ["ingest", log, "--since", "2030-01-01", "-o", str(tmp_path / "out")])
    assert (
        later.exit_code == 1 and f"nothing could be read within --since 2030-01-01:\n  {log}" in later.output
    )


def test_output_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "incident.html").write_text("x")
    result = CliRunner().invoke(
        app, ["ingest", str(SAMPLE / "router.log"), "-o", str(tmp_path / "incident.html")]
    )
    assert result.exit_code == 1
    assert "incident.html: is a file, not a folder" in result.output and "Traceback" not in result.output


def test_append_of_a_capture_of_what_out_holds_is_refused(tmp_path):
    # a capture appended after its journal: every entry counted twice (the report said 600 aborts),
    # also through a link to the same journal folder, which the path check let by
    need_journalctl()
    out = tmp_path / "out"
    ingest([SAMPLE / "journal"], out)
    (tmp_path / "link").symlink_to(SAMPLE / "journal")
    result = CliRunner().invoke(app, ["ingest", str(SAMPLE / "journal.json"), "--append", "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert (
        f"{SAMPLE / 'journal.json'}: 5,957 of its first 6,168 entries are already in {out}" in result.output
    )
    assert "ingest the journal and its captures together, without --append" in result.output
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "link"), "--append", "-o", str(out)])
    assert result.exit_code == 1, (
        result.output
    )  # the same folder (device and inode), before any entry is read
    assert f"{tmp_path / 'link'}: already in {out} (the same file or folder" in result.output
    assert events(out).height == 5964
    assert query(out, "abort_to_assert")["assert_count"].max() == 3
    # refused while journalctl still runs: the reason is the last line, with no traceback after it
    shutil.copytree(SAMPLE / "journal", tmp_path / "copy")  # another folder: known by its entries
    cli = [sys.executable, "-m", "logcorr.cli", "ingest", str(tmp_path / "copy"), "--append", "-o", str(out)]
    proc = subprocess.run(cli, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "Exception" not in proc.stderr
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith("ingest the journal and its captures together, without --append")
    )


def test_append_of_the_next_window_of_a_journal_is_accepted(tmp_path):
    # journalctl reads a minute around the window: the minute before --since is what OUT holds from
    # the window before, and it is cut later; it must not count as entries already in OUT
    need_journalctl()
    out = tmp_path / "out"
    ingest([SAMPLE / "journal"], out, ReadOptions(until="2025-10-29 21:34"))
    ingest([SAMPLE / "journal"], out, ReadOptions(since="2025-10-29 21:34"), append=True)
    assert events(out).height == 5964
    manifest = json.loads((out / "manifest.json").read_text())  # of both runs, not of the last one
    assert manifest["rows"]["events"] == 5964 and manifest["rows"]["batches"] == 2724
    # README: first / last entry of the three SGLang units
    assert manifest["time_span"] == ["2025-10-29 21:23:03.519711+00:00", "2025-10-29 21:42:59.474861+00:00"]


def test_a_journal_file_of_any_name_is_read_before_captures(tmp_path):
    # system.journal~ (what journald leaves after an unclean stop): read first, so a capture cut
    # inside a py-spy dump does not leave that dump in pieces
    need_journalctl()
    [active] = (SAMPLE / "journal").glob("*/system.journal")
    (tmp_path / "system.journal~").write_bytes(active.read_bytes())
    tail = subprocess.run(
        ["journalctl", "--file", str(active), "--since", "2025-10-29 21:39:47.633750 UTC", "-o", "export"],
        capture_output=True,
        check=True,
    ).stdout
    (tmp_path / "tail.export").write_bytes(tail)
    alone = ingest([tmp_path / "system.journal~"], tmp_path / "alone")
    both = ingest([tmp_path / "tail.export", tmp_path / "system.journal~"], tmp_path / "both")
    assert [r.source for r in both.reports] == [
        str(tmp_path / "system.journal~"),
        str(tmp_path / "tail.export"),
    ]
    assert both.rows["events"] == alone.rows["events"] and both.rows["captures"] == alone.rows["captures"]


def test_append_more_units_and_later_dumps(tmp_path):
    need_journalctl()
    out = tmp_path / "out"
    ingest([SAMPLE / "journal"], out, ReadOptions(units=("sglang-decode.service",)))
    ingest([SAMPLE / "journal"], out, ReadOptions(units=("sglang-prefill.service",)), append=True)
    dumps = sorted((SAMPLE / "pyspy").glob("decode_*_214015.txt"))
    ingest(dumps, out, append=True, captured_at="2025-10-29 21:40:15")
    caps = pl.read_parquet(out / "captures").filter(
        pl.col("source").str.ends_with("_214015.txt") & pl.col("is_main")
    )
    assert sorted(caps["tp_rank"].to_list()) == [0, 1, 2, 3]
    assert set(caps["role"]) == {"decode"} and set(caps["host"]) == {"gpu-node-1"}
    # a bare dump's own record takes its capture time (not its pid: a file is not a new process)
    dumped = events(out).filter(pl.col("source").str.ends_with("_214015.txt"))
    assert dumped["ts"].to_list() == [datetime(2025, 10, 29, 21, 40, 15, tzinfo=UTC)] * 4
    assert dumped["pid"].null_count() == 4 and sorted(dumped["tp_rank"].to_list()) == [0, 1, 2, 3]
    # each ingest summed up its own processes: decode, then prefill, then the dump files' records
    procs = pl.read_parquet(out / "processes", hive_partitioning=False)
    assert procs["records"].sum() == events(out).height
    assert procs.filter((pl.col("tp_rank") == 0) & pl.col("pid").is_not_null())["pid"].sort().to_list() == [
        3307,
        3371,
        918655,
        918661,
    ]


def test_journalctl_time_forms_with_a_plain_log_name_the_log(tmp_path):
    result = CliRunner().invoke(
        app, ["ingest", str(SAMPLE / "router.log"), "--since", "yesterday", "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 1
    assert "--since 'yesterday': use a time like '2025-10-29 21:30'" in result.output
    assert f"work only when every input is a journal, and {SAMPLE / 'router.log'} is not" in result.output
    assert not (tmp_path / "out").exists()


def test_since_until_mean_utc_for_journals_whatever_the_local_zone(tmp_path):
    need_journalctl()
    env = {**os.environ, "TZ": "America/New_York"}
    args = [
        "ingest",
        str(SAMPLE / "journal"),
        "--since",
        "2025-10-29 21:34:40",
        "--until",
        "2025-10-29 21:34:50",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "logcorr.cli", *args, "-o", str(tmp_path / "out")],
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    ts = events(tmp_path / "out")["ts"]
    assert ts.min().isoformat() >= "2025-10-29T21:34:40" and ts.max().isoformat() <= "2025-10-29T21:34:51"


def test_a_window_cuts_journals_and_captures_alike_per_record(tmp_path):
    # --since falls inside prefill TP0's assertion traceback (its head at 21:34:43.504237, the
    # lines after it at .504245-.504256), --until inside a py-spy dump the watchdog wrote: journalctl
    # alone would cut between entries, leave the traceback's last lines as records of their own and
    # keep the dump's head; read a minute wider and cut per record, the journal gives what its
    # capture gives.
    need_journalctl()
    window = ReadOptions(since="2025-10-29T21:34:43.504245", until="2025-10-29T21:39:47.5337")
    cols = ["ts", "pid", "kind", "message", "n_lines"]
    ingest([SAMPLE / "journal"], tmp_path / "j", window)
    ingest([SAMPLE / "journal.json"], tmp_path / "c", window)
    journal, capture = (events(tmp_path / name).select(cols).sort("ts", "message") for name in "jc")
    assert journal.equals(capture) and journal.height == 557
    assert journal["ts"].min().isoformat() == "2025-10-29T21:34:43.508904+00:00"
    assert not journal["message"].str.starts_with("  File ").any()
    assert not journal["message"].str.starts_with("AssertionError").any()
    dump = journal.row(-1, named=True)  # its head at 21:39:47.533588, the rest after --until: whole
    assert dump["kind"] == "pyspy" and dump["n_lines"] > 20 and "Thread 3371 (idle)" in dump["message"]
    assert journalctl_window("2025-10-29 21:34:43.504245", None) == [
        "--since",
        "2025-10-29 21:33:43.504245 UTC",
    ]
    assert journalctl_window("yesterday", "2025-10-29 21:35") == [
        "--since",
        "yesterday",
        "--until",
        "2025-10-29 21:35:00 UTC",
    ]


def test_progress_in_a_log_is_rate_limited_and_on_a_terminal_rewritten(capsys, monkeypatch):
    from logcorr.cli import Progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    quiet = Progress(every=3600)
    for i in range(200):  # a day's chunks within the hour: nothing to the log
        quiet(f"journal: {i:,} records")
    assert capsys.readouterr().err == ""
    chatty = Progress(every=0)
    chatty("journal: 29,683 records, 16 MB")
    assert capsys.readouterr().err == "  … journal: 29,683 records, 16 MB\n"
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    term = Progress()
    term("a")
    term("b")
    term.done()
    assert capsys.readouterr().err == "\r\x1b[K  … a\r\x1b[K  … b\r\x1b[K"


def test_append_of_a_plain_log_and_a_capture_reads_only_what_out_held(tmp_path):
    # the capture's entries were compared with OUT's events folder as it was while being written,
    # half a part file of the plain log in it: polars failed with "must end with PAR1"
    out = tmp_path / "out"
    ingest([SAMPLE / "router.log"], out)
    plain = tmp_path / "prefill.log"
    plain.write_text(
        "[2025-10-29 21:40:00 TP0] Prefill batch. #new-seq: 1, #new-token: 10, #cached-token: 0,"
        " token usage: 0.00, #running-req: 0, #queue-req: 0\n"
    )
    result = CliRunner().invoke(
        app, ["ingest", "--append", str(plain), str(SAMPLE / "journal.json"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert events(out).height == 1097 + 1 + 5964  # each alone: 1,097 and 5,964
    result = CliRunner().invoke(app, ["ingest", "--append", str(SAMPLE / "journal.export"), "-o", str(out)])
    assert result.exit_code == 1 and "entries are already in" in result.output


def test_a_note_many_inputs_share_is_said_once(tmp_path):
    """Twelve dump files without a time (issue 30 item 8): the summary names each file and says the
    note once, with how many inputs it is about."""
    from logcorr.pipeline.notes import format_summary

    dumps = sorted((SAMPLE / "pyspy").glob("*.txt"))
    text = format_summary(ingest(dumps, tmp_path / "out"))
    note = "no time in the dump: give --captured-at (when it was taken) to place it on the timeline"
    assert text.count(note) == 1 and f"  {len(dumps)} inputs: {note}" in text
    assert all(f"  {d} [pyspy]: 1 records\n" in text for d in dumps)


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--role", "llm-a"], "--role 'llm-a': expected UNIT=ROLE"),
        (["--since", "nonsense"], "--since 'nonsense'"),
    ],
)
def test_a_bad_option_value_exits_1_as_the_help_says(tmp_path, option, says):
    log = tmp_path / "router.log"
    log.write_text("2025-10-29T21:34:40.123Z INFO sglang_router_rs::routers::pd_router: x\n")
    result = CliRunner().invoke(app, ["ingest", str(log), "-o", str(tmp_path / "out"), *option])
    assert result.exit_code == 1 and says in result.output
    assert "1 nothing written (no input readable, a bad option value" in " ".join(
        CliRunner().invoke(app, ["ingest", "--help"], env={"COLUMNS": "200"}).output.split()
    )
    assert not (tmp_path / "out").exists()


def test_two_clocks_in_one_input_give_two_spans_never_one(tmp_path):
    """A paste of Dynamo's UTC lines (``…Z``) beside SGLang's local ones (no zone, UTC-7): the summary
    and ``sources`` say each clock's span apart, never one span from 19:45 (local) to 02:45 UTC."""
    log = tmp_path / "two_clocks.log"
    log.write_text(
        "2026-07-06T02:45:29.886032Z  INFO dynamo_llm::discovery: Registered base model 'm' MDC\n"
        "[2026-07-05 19:45:29.924] Model registration succeeded\n"
        "[2026-07-05 19:49:44 TP1] Scheduler hit an exception: RuntimeError: boom\n"
    )
    got = CliRunner().invoke(app, ["ingest", str(log), "-o", str(tmp_path / "o")])
    assert got.exit_code == 0, got.output
    assert (
        "time span: 2026-07-06 02:45:29 .. 2026-07-06 02:45:29 (UTC, 1 record(s)); 2026-07-05 19:45:29 .."
        " 2026-07-05 19:49:44 (2 record(s) printed without a zone, as printed)"
    ) in got.output
    row = query(tmp_path / "o", "SELECT first_ts, last_ts, zoneless_first_ts FROM sources").row(0)
    assert [t.isoformat() for t in row] == [
        "2026-07-06T02:45:29.886032+00:00", "2026-07-06T02:45:29.886032+00:00", "2026-07-05T19:45:29.924000+00:00"
    ]  # fmt: skip


def test_a_large_inputs_content_digest_is_taken_while_it_is_read_and_append_still_refuses_a_copy(
    tmp_path, monkeypatch
):
    """Without --append, a file of DIGEST_WHILE_READING bytes or more is hashed by its reader as it reads
    it (no pass of its own before): the manifest's sha256 is the file's, and no whole-content identity is
    taken; a copy of it under another name is then refused by --append (by that sha256)."""
    from logcorr.inputs import paths

    monkeypatch.setattr(paths, "DIGEST_WHILE_READING", 0)  # every file counts as large
    src = next(iter(sorted((need_cases() / "batch11").glob("0*.log"))))
    whole = []
    real = paths.identity
    monkeypatch.setattr(
        paths,
        "identity",
        lambda p, c=None, *, content=True: (
            (whole.append(p) if content else None) or real(p, c, content=content)
        ),
    )
    out = tmp_path / "out"
    ingest([src], out)
    (given,) = json.loads((out / "manifest.json").read_text())["inputs"]
    assert given["identity"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert whole == []
    copy = tmp_path / "renamed.log"
    shutil.copyfile(src, copy)
    with pytest.raises(OptionError, match="already in"):
        ingest([copy], out, append=True)
    assert whole == [copy]  # --append compares before reading: its identity is taken first
    whole.clear()
    capture = SAMPLE / "journal.export"  # a journalctl -o export capture: its reader takes it too
    ingest([capture], tmp_path / "export")
    (given,) = json.loads((tmp_path / "export" / "manifest.json").read_text())["inputs"]
    assert given["identity"]["sha256"] == hashlib.sha256(capture.read_bytes()).hexdigest()
    assert whole == []
