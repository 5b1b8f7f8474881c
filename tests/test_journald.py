"""journald formats: export (text and binary-safe fields), -o json, -o short-*; the real journals."""

from __future__ import annotations

import json
import lzma
import struct
import subprocess
from pathlib import Path

import polars as pl
import pytest

from logcorr.inputs.export import export_chunks
from logcorr.inputs.journal import read_journal
from logcorr.inputs.sniff import sniff
from logcorr.inputs.source import InputError, ReadOptions, SourceReport
from logcorr.inputs.text import read_text, text_blocks
from logcorr.parsers.journald import (
    parse_export,
    parse_json_block,
    parse_json_lines,
    parse_short_lines,
    split_lines,
)
from tests.conftest import need_journalctl


def binary_field(name: str, value: bytes) -> bytes:
    return name.encode() + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"


def entry(cursor: str, ts: int, pid: int, message: bytes | str, unit: str = "sglang-decode.service") -> bytes:
    head = f"__CURSOR={cursor}\n__REALTIME_TIMESTAMP={ts}\n_BOOT_ID=b0\n_PID={pid}\n_SYSTEMD_UNIT={unit}\n".encode()
    body = binary_field("MESSAGE", message) if isinstance(message, bytes) else f"MESSAGE={message}\n".encode()
    return head + body + b"\n"


def test_export_text_and_binary_fields():
    data = (
        entry("c1", 1761773687000001, 41, "[2025-10-29 21:34:47 TP0] Decode batch, #running-req: 3")
        + entry("c2", 1761773687000002, 41, b"line one\nline two\x1b[31m red\x1b[0m")
        + entry("c3", 1761773687000003, 42, b"bad \xff\xfe bytes")
    )
    df = parse_export(data, source="cap.export")
    assert df["source_pos"].to_list() == ["c1", "c2", "c3"]
    assert df["pid"].to_list() == [41, 41, 42]
    assert df["ts"][0].isoformat() == "2025-10-29T21:34:47.000001+00:00"
    assert df["message"][1] == "line one\nline two red"  # one record, ANSI removed
    assert df["message"][2] == "bad \ufffd\ufffd bytes"  # kept, replaced only where invalid
    assert df["unit"].unique().to_list() == ["sglang-decode.service"]
    assert df["entry_error"].null_count() == 3


def test_export_binary_field_holding_blank_lines_is_not_split():
    data = entry("c1", 1, 7, b"a\n\nb\n\n") + entry("c2", 2, 7, "next")
    df = parse_export(data, source="x")
    assert df.height == 2
    assert df["message"].to_list() == ["a\n\nb\n\n", "next"]


def test_export_cut_binary_field_is_reported_and_text_kept():
    data = (
        entry("c1", 1, 7, "whole")
        + b"__CURSOR=c2\n__REALTIME_TIMESTAMP=2\nMESSAGE\n"
        + struct.pack("<Q", 50)
        + b"short"
    )
    df = parse_export(data, source="x")
    assert df["message"][0] == "whole"
    assert "cut short" in df["entry_error"][-1]


def test_export_binary_fields_found_by_their_nul_bytes():
    # Each binary-safe field is cut out at the NUL in its length prefix: one first in its entry, one
    # whose length byte is a newline (10 bytes), one whose value holds NULs, one repeating MESSAGE.
    data = (
        binary_field("MESSAGE", b"\x1b[33mfirst\x1b[0m")
        + b"__CURSOR=c1\n__REALTIME_TIMESTAMP=1\n_PID=7\n\n"
        + entry("c2", 2, 7, b"ten bytes\t")
        + entry("c3", 3, 8, b"nul\x00inside")
        + b"__CURSOR=c4\n__REALTIME_TIMESTAMP=4\nMESSAGE=text part\n"
        + binary_field("MESSAGE", b"binary\tpart")
        + b"_PID=9\n\n"
    )
    df = parse_export(data, source="x")
    assert df["source_pos"].to_list() == ["c1", "c2", "c3", "c4"]
    assert df["message"].to_list() == ["first", "ten bytes\t", "nul\x00inside", "text part\nbinary\tpart"]
    assert df["pid"].to_list() == [7, 7, 8, 9]
    assert df["entry_error"].null_count() == 4


def test_systemd_export_test_file_repeated_binary_field(cases):
    df = parse_export((cases / "journal" / "systemd_journal-1.export").read_bytes(), source="t")
    assert df.height == 1
    msg = df["message"][0]
    # no MESSAGE: the fields are kept as NAME=value lines, the repeated binary field twice
    assert msg.count("COREDUMP_PROC_CGROUP=1:name=systemd:/\n0::/user.slice/user-1002.slice/") == 2
    assert "COREDUMP_RLIMIT=-1" in msg
    assert df["ts"][0].isoformat() == "2016-11-05T23:39:07.837970+00:00"
    assert df["boot_id"][0] == "1531fd22ec84429e85ae888b12fadb91"


def test_json_lines_all_value_shapes():
    lines = pl.Series(
        [
            '{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1761773687000001","_PID":"41","MESSAGE":"hello"}',
            '{"__CURSOR":"c2","__REALTIME_TIMESTAMP":"1761773687000002","_PID":"41","MESSAGE":[104,105,255]}',
            '{"__CURSOR":"c3","__REALTIME_TIMESTAMP":"1761773687000003","_PID":"41","MESSAGE":["a","b"]}',
            '{"__CURSOR":"c4","__REALTIME_TIMESTAMP":"1761773687000004","_PID":"41","MESSAGE":null}',
            '{"__CURSOR":"c5","__REALTIME_TIMES',
        ]
    )
    df = parse_json_lines(lines, source="cap.json")
    assert df["message"].to_list()[:3] == ["hello", "hi\ufffd", "a\nb"]
    assert df["source_pos"].to_list()[:4] == ["c1", "c2", "c3", "c4"]
    assert df["message"][3] == ""  # MESSAGE null: an empty message, not the entry's JSON (issue 47 F23)
    assert df["pid"][3] == 41 and df["entry_error"][3] is None
    assert df["entry_error"][4] == "not a whole JSON object"
    assert df["message"][4] == '{"__CURSOR":"c5","__REALTIME_TIMES'  # cut line kept as text
    assert df["source_pos"][4] == "line 5"


def test_json_array_values_land_in_their_own_rows_after_blank_lines():
    # the array values are read again by Python and put back by row; blank lines, dropped before,
    # shift each entry's row from its line number
    lines = pl.Series(
        [
            "",
            '{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1761773687000001","_PID":"41","MESSAGE":"[2025-10-29 21:34:47 TP0] a"}',
            "   ",
            '{"__CURSOR":"c2","__REALTIME_TIMESTAMP":"1761773687000002","_PID":"42","MESSAGE":[104,105,255]}',
            '{"__CURSOR":"c3","__REALTIME_TIMESTAMP":"1761773687000003","_PID":"43","MESSAGE":"plain"}',
            "",
            '{"__CURSOR":"c4","__REALTIME_TIMESTAMP":"1761773687000004","_PID":"44","MESSAGE":["x","y"],"_COMM":["p","q"]}',
        ]
    )
    df = parse_json_lines(lines, source="cap.json", first_line=10)
    assert df["source_pos"].to_list() == ["c1", "c2", "c3", "c4"]
    assert df["message"].to_list() == ["[2025-10-29 21:34:47 TP0] a", "hi\ufffd", "plain", "x\ny"]
    assert df["pid"].to_list() == [41, 42, 43, 44]
    assert df["comm"].to_list() == [None, None, None, "p\nq"]


def _json_entry(n: int, message: object = "", **fields: object) -> str:
    """One ``journalctl -o json`` line (compact, as systemd 252 writes it)."""
    obj = {"__CURSOR": f"c{n}", "__REALTIME_TIMESTAMP": str(1761773687000000 + n), "_BOOT_ID": "b0"}
    obj |= {"_PID": "41", "_SYSTEMD_UNIT": "sglang-decode.service", "MESSAGE": message, **fields}
    return json.dumps({k: v for k, v in obj.items() if v is not ...}, separators=(",", ":"))


def test_json_block_reads_every_line_as_the_line_reader_does():
    # a block read whole by Arrow's reader; its odd lines (array values, MESSAGE null or absent)
    # through parse_json_lines: the same rows, in line order, as the line reader gives
    lines = [
        _json_entry(1, "[2025-10-29 21:34:47 TP0] Decode batch, #running-req: 3"),
        _json_entry(2, [104, 105, 255]),  # bytes that are no UTF-8: journalctl's array
        _json_entry(3, "\x1b[31mred\x1b[0m\r"),
        _json_entry(4, None),  # MESSAGE null: an empty message
        _json_entry(5, ..., _COMM="python3"),  # no MESSAGE: the entry's JSON is its text
        _json_entry(6, "x", __CURSOR=..., __REALTIME_TIMESTAMP="99999999999999999999"),
        _json_entry(7, "y", _COMM=["a", "b"]),  # a repeated field
        _json_entry(8, "é ✓"),
    ]
    data = ("\n".join(lines) + "\n").encode()
    block = parse_json_block(data, source="cap.json", first_line=20)
    assert block is not None  # read whole, not line by line
    assert block.equals(parse_json_lines(split_lines(data), source="cap.json", first_line=20))
    assert block["message"].to_list()[:4] == [
        "[2025-10-29 21:34:47 TP0] Decode batch, #running-req: 3",
        "hi\ufffd",
        "red",
        "",
    ]
    assert block["message"][4] == lines[4]
    assert block["source_pos"].to_list() == ["c1", "c2", "c3", "c4", "c5", "line 25", "c7", "c8"]
    assert block["stream"].to_list()[3:6] == [
        "b0/41/sglang-decode.service/entry 23",  # no message: a record of its own
        "b0/41/sglang-decode.service/entry 24",
        "b0/41/sglang-decode.service",
    ]
    assert block["ts"][0].isoformat() == "2025-10-29T21:34:47.000001+00:00" and block["ts"][5] is None
    assert block["entry_error"][5].startswith("__REALTIME_TIMESTAMP=99999999999999999999 is not a time")
    assert block["comm"][6] == "a\nb"


@pytest.mark.parametrize(
    "odd",
    [
        "",  # a blank line
        "   ",
        '{"MESSAGE":"a"}{"MESSAGE":"b"}',  # two objects on a line
        '{"__CURSOR":"c9","MESSAGE":"cut',  # a cut line
        '{"__CURSOR":"c9","MESSAGE":5}',  # a MESSAGE that is no text
        '{"__CURSOR":"c9","MESSAGE":"a","MESSAGE":"b"}',
        '{"__CURSOR":"c9","MESSAGE":"\\udc80"}',  # a lone surrogate (Python's and DuckDB's readers take it)
        ' {"__CURSOR":"c9","MESSAGE":"indented"}',
    ],
)
def test_json_block_refuses_what_is_not_plain_and_ingest_reads_it_by_lines(tmp_path, odd):
    data = (_json_entry(1, "one") + "\n" + odd + "\n" + _json_entry(3, "three") + "\n").encode()
    assert parse_json_block(data, source="cap.json") is None
    path = tmp_path / "cap.json"
    path.write_bytes(data)
    report = SourceReport(str(path), "json")
    records = pl.concat(read_text(path, "json", report))
    assert records.equals(parse_json_lines(split_lines(data), source=str(path)))
    assert records["source_pos"][-1] == "c3" and report.bytes == len(data)


def test_json_message_no_text_is_the_entrys_own_not_a_nested_key():
    # an entry is a stream of its own when its own MESSAGE is no text (a number, an object); a key
    # MESSAGE inside another field's object is not the entry's (the rule read it there before)
    lines = [
        _json_entry(1, "Traceback (most recent call last):", X={"MESSAGE": 5}),
        _json_entry(2, '  File "a.py", line 1, in <module>', X={"MESSAGE": None}),
        _json_entry(3, 5),
        _json_entry(4, {"a": 1}),
        _json_entry(5, ..., X={"MESSAGE": None}),  # no MESSAGE of its own: its JSON is its text
    ]
    df = parse_json_lines(pl.Series(lines), source="cap.json")
    assert df["stream"].to_list() == [
        "b0/41/sglang-decode.service",
        "b0/41/sglang-decode.service",
        "b0/41/sglang-decode.service/entry 3",
        "b0/41/sglang-decode.service/entry 4",
        "b0/41/sglang-decode.service/entry 5",
    ]
    assert df["message"].to_list() == [
        *(json.loads(x)["MESSAGE"] for x in lines[:2]),
        "5",
        '{"a":1}',
        lines[4],
    ]
    data = ("\n".join(lines[:2]) + "\n").encode()
    assert parse_json_block(data, source="cap.json").equals(df.head(2))


def test_json_array_values_of_an_older_journalctl_spaced_around_the_colon():
    # systemd 219 (CentOS 7) writes '"MESSAGE" : [ 104, 105 ]': the bytes, not the array's text
    lines = pl.Series(
        ['{ "__CURSOR" : "c1", "_PID" : "41", "MESSAGE" : [ 104, 105, 255 ], "_COMM" : [ "p", "q" ] }']
    )
    df = parse_json_lines(lines, source="cap.json")
    assert df["message"].to_list() == ["hi\ufffd"] and df["comm"].to_list() == ["p\nq"]
    assert df["source_pos"].to_list() == ["c1"] and df["pid"].to_list() == [41]


def test_text_blocks_count_the_lines_split_lines_gives(tmp_path):
    path = tmp_path / "cap.json"
    path.write_bytes(b"\xef\xbb\xbfa\r\n\r\nb\rc\n\n\xff d")  # BOM, CRLF, a lone CR, no final newline
    blocks = list(text_blocks(path))
    assert [(first, piece, n) for _, first, piece, n in blocks] == [(1, 0, 5), (6, 0, 1)]
    assert [split_lines(data).to_list() for data, *_ in blocks] == [["a", "", "b", "c", ""], ["\ufffd d"]]


@pytest.mark.parametrize(
    "first,ts",
    [
        ("2025-10-29T21:34:47+0000 gpu-node-1 python3[4123]: hello", "2025-10-29T21:34:47+00:00"),
        (
            "2025-10-29T23:34:47.123456+02:00 gpu-node-1 python3[4123]: hello",
            "2025-10-29T21:34:47.123456+00:00",
        ),
        ("1761773687.123456 gpu-node-1 python3[4123]: hello", "2025-10-29T21:34:47.123456+00:00"),
    ],
)
def test_short_formats_with_continuation(first, ts):
    prefix_width = len(first) - len("hello")
    lines = pl.Series(["-- Boot 0123abcd --", first, " " * prefix_width + "second line", "-- No entries --"])
    df = parse_short_lines(lines, source="cap.txt")
    assert df.height == 1
    assert df["ts"][0].isoformat() == ts
    assert df["message"][0] == "hello\nsecond line"
    assert df["pid"][0] == 4123 and df["host"][0] == "gpu-node-1" and df["source_pos"][0] == "line 2"


def _unpack(src: Path, dst: Path) -> Path:
    out = dst / src.name.removesuffix(".xz")
    out.write_bytes(lzma.decompress(src.read_bytes()))
    return out


@pytest.mark.parametrize("name", ["velociraptor_2004.journal.xz", "velociraptor_2404.journal.xz"])
def test_real_journals_give_three_entries(cases, tmp_path, name):
    need_journalctl()
    path = _unpack(cases / "journal" / name, tmp_path)
    assert sniff(path) == "journal"
    report = SourceReport(str(path), "journal")
    df = pl.concat(list(read_journal(path, ReadOptions(), report)))
    assert df.height == 3
    assert df["message"][0] == "Journal started"
    assert any("reading every entry" in n for n in report.notes)


def test_truncated_journal_refused_with_reason(cases, tmp_path):
    need_journalctl()
    path = _unpack(cases / "journal" / "velociraptor_system.journal.xz", tmp_path)
    with pytest.raises(
        InputError, match="velociraptor_system.journal: journalctl refused it: .*No data available"
    ):
        list(read_journal(path, ReadOptions(), SourceReport(str(path), "journal")))


def test_export_stream_cut_inside_binary_field_is_recut(tmp_path):
    from logcorr.inputs.export import export_chunks

    big = b"x\n\n" * 3000  # a binary value full of blank lines, longer than one read
    data = entry("c1", 1, 7, "first") + entry("c2", 2, 7, big) + entry("c3", 3, 7, "last")
    blocks = [data[i : i + 1000] for i in range(0, len(data), 1000)]
    report = SourceReport("x", "export")
    df = pl.concat(list(export_chunks(iter(blocks), "x", report)))
    assert df["source_pos"].to_list() == ["c1", "c2", "c3"]
    assert df["message"][1] == big.decode()
    assert df["entry_error"].null_count() == 3


def test_export_without_cursors_gets_entry_numbers_across_chunks(tmp_path):
    # the input of systemd-journal-remote (the sample's journal.export) has no __CURSOR
    data = b"".join(
        f"__REALTIME_TIMESTAMP={1761773100000000 + i}\nMESSAGE=line {i}\n\n".encode() for i in range(5)
    )
    assert parse_export(data, source="x", first_entry=10)["source_pos"].to_list() == [
        f"entry {n}" for n in range(11, 16)
    ]
    path = tmp_path / "cap.export"
    path.write_bytes(data * 2000)  # 10,000 entries, read in several chunks
    report = SourceReport(str(path), "export")
    with open(path, "rb") as f:
        chunks = list(export_chunks(iter(lambda: f.read(4096), b""), str(path), report))
    assert len(chunks) > 1
    pos = pl.concat(chunks)["source_pos"]
    assert pos.to_list() == [f"entry {n}" for n in range(1, 10_001)]


JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")


def _journal(tmp_path: Path, entries: list[dict[str, str]]) -> Path:
    """A real journal folder made by systemd-journal-remote from export text of ``entries``."""
    if not JOURNAL_REMOTE.exists():
        pytest.skip("systemd-journal-remote not installed (apt-get install systemd-journal-remote)")
    need_journalctl()
    text = "".join("".join(f"{k}={v}\n" for k, v in e.items()) + "\n" for e in entries)
    (tmp_path / "in.export").write_text(text)
    folder = tmp_path / "journal"
    folder.mkdir()
    out = f"--output={folder / 'remote.journal'}"
    subprocess.run([str(JOURNAL_REMOTE), "--split-mode=none", out, str(tmp_path / "in.export")], check=True)
    return folder


def _line(i: int, unit: str, pid: int, cmdline: str, message: str) -> dict[str, str]:
    return {
        "__CURSOR": f"s=1;i={i}",
        "__REALTIME_TIMESTAMP": str(1761773687000000 + i * 1_000_000),
        "_BOOT_ID": "0" * 32,
        "_HOSTNAME": "gpu-node-1",
        "_SYSTEMD_UNIT": unit,
        "_PID": str(pid),
        "_COMM": cmdline.split()[0].rsplit("/", 1)[-1][:15],
        "_CMDLINE": cmdline,
        "MESSAGE": message,
    }


def test_units_chosen_by_command_line_on_systemd_252_and_roles_named_without_service(tmp_path):
    """Issue 30 item 4: engines in units not named like SGLang are chosen by their processes' command
    lines (systemd 252's journalctl refuses ``_SYSTEMD_UNIT=U -F _CMDLINE``), ``--role NAME=ROLE``
    names NAME.service, and a --role no unit matches is said."""
    prefill = "python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill --port 30000"
    decode = "python3 -m sglang.launch_server --model-path m --disaggregation-mode decode --port 30001"
    other = "/usr/bin/python3 -m sglang.launch_server --model-path m --port 30002"
    folder = _journal(
        tmp_path,
        [
            _line(1, "llm-a.service", 100, prefill, "[2025-10-29 21:34:48 TP0] Prefill batch. #new-seq: 1"),
            _line(2, "llm-b.service", 200, decode, "[2025-10-29 21:34:49 TP0] Decode batch. #running-req: 1"),
            _line(3, "llm-c.service", 300, other, "[2025-10-29 21:34:50 TP0] Decode batch. #running-req: 2"),
            _line(4, "cron.service", 400, "/usr/sbin/cron -f", "(root) CMD (run-parts /etc/cron.hourly)"),
        ],
    )
    report = SourceReport(str(folder), "journal-dir")
    opts = ReadOptions(roles={"llm-c": "decode", "llm-z": "prefill"})
    df = pl.concat(list(read_journal(folder, opts, report)))
    assert (
        "units chosen: llm-a.service (prefill), llm-b.service (decode), llm-c.service (decode)"
        in report.notes
    )
    assert "units skipped: cron.service (use --unit or --all-units to read them)" in report.notes
    assert any(
        n.startswith("--role llm-z=prefill: this journal has no unit llm-z or llm-z.service")
        for n in report.notes
    )
    assert not any(n.startswith("--role llm-c") for n in report.notes)
    assert sorted(df["unit"].to_list()) == ["llm-a.service", "llm-b.service", "llm-c.service"]
