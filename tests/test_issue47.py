"""Issue 47, an outsider's trial (/tmp/s23/trial4.md): the causes N1, N2 (archives and compressions
other than gz/xz), N3 (ingest, show and combine), N4 (query's human forms held the whole result), N7,
N8 (a one-line document's progress and rate), N9 and F23, each reproduced and its fix asserted (N5 and
N6, of ``combine``, are in test_combine.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logcorr.cli import app
from tests.conftest import sql

run = CliRunner().invoke

BATCH = "[2025-10-29 21:25:0{s} TP0] Prefill batch, #new-seq: 1, #new-token: 5, #prealloc-req: 0\n"


def write_log(path: Path, lines: int = 3) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(BATCH.format(s=s) for s in range(lines)))
    return path


def bundle(folder: Path, artifacts) -> Path:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(
        json.dumps({"collector": "logcorr collect", "artifacts": artifacts})
    )
    return folder


def test_n1_a_file_in_a_bundle_its_manifest_does_not_list_is_named_and_the_exit_is_3(tmp_path: Path):
    bu = bundle(tmp_path / "bu", [{"kind": "container_log", "file": "listed.log"}, 5])
    write_log(bu / "listed.log")
    write_log(bu / "extra.log")
    write_log(bu / "more" / "decode.log")
    out = tmp_path / "out"
    result = run(app, ["ingest", str(bu), "-o", str(out)])
    assert result.exit_code == 3, result.output
    why = "in the bundle but not in its manifest: not read"
    for name in ("extra.log", "more/decode.log"):
        assert f"{bu / name}: {why}" in result.output
    rows = sql(out, "select source, format, errors, notes from sources order by source")
    assert [(r[0], r[1], why in (r[2] or "")) for r in rows] == [
        (str(bu / "extra.log"), "skipped", True),
        (str(bu / "listed.log"), "text", False),
        (str(bu / "manifest.json"), "bundle-manifest", False),
        (str(bu / "more/decode.log"), "skipped", True),
    ]
    assert rows[2][3] == f"{bu / 'manifest.json'}: 1 of its 2 artifacts are not objects: those are not read"
    assert sql(out, "select count(*) from events where source like '%listed.log'") == [(3,)]


def test_n1_an_empty_manifest_says_why_nothing_was_read(tmp_path: Path):
    bu = bundle(tmp_path / "bu1", [])
    write_log(bu / "router.log")
    result = run(app, ["ingest", str(bu), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert f"nothing could be read:\n  {bu / 'manifest.json'}: its artifacts list is empty" in result.output
    assert f"  {bu / 'router.log'}: in the bundle but not in its manifest: not read" in result.output


@pytest.mark.parametrize(
    "doc,said",
    [
        ({"resourceLogs": [1]}, "resourceLogs[0] is a number, not an object"),
        ({"resourceSpans": ["x"]}, "resourceSpans[0] is a string, not an object"),
        (
            {"status": "success", "data": {"resultType": "streams", "result": [1]}},
            "data.result[0] is a number, not an object",
        ),
        (
            {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "hi"}}, 7]}]}]},
            "resourceLogs[0].scopeLogs[0].logRecords[1] is a number, not an object",
        ),
        (
            {"resourceLogs": [{"resource": [], "scopeLogs": []}]},
            "resourceLogs[0].resource is an array, not an object",
        ),
    ],
)
def test_n9_a_wrong_json_type_in_an_export_is_said_in_the_format_s_terms(tmp_path: Path, doc, said):
    export = tmp_path / "export.json"
    export.write_text(json.dumps(doc) + "\n")
    result = run(
        app, ["ingest", str(export), str(write_log(tmp_path / "a.log")), "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 3, result.output
    assert f"error: {export}: {said}: not the shape of its format; the rest is not read" in result.output
    assert "attribute" not in result.output and "Error" not in result.output


def test_n7_an_entity_written_in_the_data_renders_as_itself(tmp_path: Path):
    from logcorr.markdown import md
    from logcorr.render.terminal import for_terminal

    assert md("gpu&lt;x & y <b>") == "gpu&amp;lt;x &amp; y &lt;b&gt;"  # renders as gpu&lt;x & y <b>
    assert md("&#x202E;", cell=True) == "&amp;#x202E;"
    assert md("a&b", code=True) == "`a&b`"  # code shows it as it is
    assert for_terminal("- host " + md("gpu&lt;x & &amp; <b>") + "\n", 80) == "- host gpu&lt;x & &amp; <b>\n"


def test_n3_a_newline_in_an_input_s_name_is_shown_escaped_in_the_summary_and_in_show(tmp_path: Path):
    forged = "x.log\n    error: forged line, nothing was lost\n  fake.log [text]: 99 records"
    log = write_log(tmp_path / forged)
    out = tmp_path / "out"
    result = run(app, ["ingest", str(log), "-o", str(out)])
    assert result.exit_code == 0, result.output
    shown = (
        str(tmp_path) + "/x.log\\n    error: forged line, nothing was lost\\n  fake.log [text]: 99 records"
    )
    assert result.output.splitlines()[1] == f"  {shown} [text]: 3 records"
    assert not any(
        line.lstrip().startswith(("error: forged", "fake.log")) for line in result.output.splitlines()
    )
    (event_id,) = sql(out, "select min(event_id) from events")[0]
    lines = run(app, ["show", str(event_id), "-d", str(out)]).output.splitlines()
    assert lines[0].endswith(f"({shown}:line 1)")
    assert lines[-1] == f"in the file: sed -n '1,21p' '{shown}'"
    assert not any(line.lstrip().startswith(("error: forged", "fake.log")) for line in lines)


# -- N2: archives and compressions other than gz, xz and tar.gz ------------------------------------


def zst_frames(data: bytes) -> bytes:
    """``data`` as zstd (RFC 8878) frames of raw blocks, one frame per 255 bytes: a valid zstd file
    made without the zstd tool or module (frame header: single segment, a one-byte content size)."""
    frames = []
    for i in range(0, len(data), 255):
        piece = data[i : i + 255]
        block = (1 | len(piece) << 3).to_bytes(3, "little")  # the last block, raw
        frames.append(b"\x28\xb5\x2f\xfd" + bytes([0x20, len(piece)]) + block + piece)
    return b"".join(frames)


def pack_log(tmp_path: Path, how: str) -> Path:
    """A three-batch log packed ``how``: a compressed file (bz2, zst) or an archive holding it (zip)."""
    import bz2
    import zipfile

    log = write_log(tmp_path / "src" / "router.log")
    packed = tmp_path / f"packed.{how}"
    if how == "bz2":
        packed.write_bytes(bz2.compress(log.read_bytes()))
    elif how == "zst":
        packed.write_bytes(zst_frames(log.read_bytes()))
    else:
        with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(log, "logs/router.log")
    return packed


@pytest.mark.parametrize("how", ["bz2", "zst", "zip"])
def test_n2_a_log_packed_as_bz2_zst_or_zip_is_read_unpacked(tmp_path: Path, how: str):
    if how == "zst":
        pytest.importorskip("zstandard")
    packed = pack_log(tmp_path, how)
    out = tmp_path / "out"
    result = run(app, ["ingest", str(packed), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = sql(out, "select kind, count(*), min(ts)::varchar, max(ts)::varchar from events group by 1")
    assert rows == [("batch", 3, "2025-10-29 21:25:00+00", "2025-10-29 21:25:02+00")]
    fmt, source = sql(out, "select format, source from sources")[0]
    assert fmt == {"bz2": "bz2", "zst": "zst", "zip": "text"}[how]
    assert source.endswith("logs/router.log" if how == "zip" else f"packed.{how}")


def test_n2_zst_without_the_zstandard_module_is_named_never_read_as_text(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "zstandard", None)  # import zstandard fails
    packed = pack_log(tmp_path, "zst")
    out = tmp_path / "out"
    result = run(app, ["ingest", str(packed), str(write_log(tmp_path / "a.log")), "-o", str(out)])
    assert result.exit_code == 3, result.output
    assert (
        f"error: {packed}: a zst file: not read: Python's zstandard module is not installed (pip install "
        "zstandard, or unpack it with zstd -d and name the file)"
    ) in result.output
    assert sql(out, "select count(*), count(distinct source) from events") == [(3, 1)]


@pytest.mark.parametrize("how", ["tar", "tar.xz", "tar.bz2", "zip"])
def test_n2_a_bundle_packed_as_tar_tar_xz_tar_bz2_or_zip_is_read_by_its_manifest(tmp_path: Path, how: str):
    import tarfile
    import zipfile

    bu = bundle(tmp_path / "b" / "bundle-h", [{"kind": "container_log", "file": "engine.log"}])
    write_log(bu / "engine.log")
    packed = tmp_path / f"bundle.{how}"
    if how == "zip":
        with zipfile.ZipFile(packed, "w") as z:
            for f in ("manifest.json", "engine.log"):
                z.write(bu / f, f"bundle-h/{f}")
    else:
        with tarfile.open(packed, "w:" + how.partition(".")[2]) as tar:
            tar.add(bu, "bundle-h")
    out = tmp_path / "out"
    result = run(app, ["ingest", str(packed), "-o", str(out)])
    assert result.exit_code == 0, result.output
    formats = sql(out, "select format, regexp_extract(source, '[^/]+/[^/]+$') from sources order by 2")
    assert formats == [("text", "bundle-h/engine.log"), ("bundle-manifest", "bundle-h/manifest.json")]
    assert sql(out, "select kind, count(*) from events group by 1 order by 1") == [("batch", 3), ("other", 1)]


def test_n2_a_member_that_cannot_be_unpacked_is_named_the_others_read(tmp_path: Path):
    import io
    import tarfile
    import zipfile

    log = write_log(tmp_path / "src" / "a.log").read_bytes()
    tar = tmp_path / "logs.tar"
    with tarfile.open(tar, "w") as t:
        for name in ("logs/a.log", "../../escape.log"):
            info = tarfile.TarInfo(name)
            info.size = len(log)
            t.addfile(info, io.BytesIO(log))
    zipped = tmp_path / "logs.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("good.log", log)
        z.writestr("bad.log", log * 50)
    data = bytearray(zipped.read_bytes())
    second = data.find(b"PK\x03\x04", 4)  # bad.log's local header; its deflated data 37 bytes on
    data[second + 60 : second + 90] = bytes(30)
    zipped.write_bytes(data)
    out = tmp_path / "out"
    result = run(app, ["ingest", str(tar), str(zipped), "-o", str(out)])
    assert result.exit_code == 3, result.output
    assert (
        f"error: {tar}: its member ../../escape.log: not unpacked: '../../escape.log' would be extracted"
        in (result.output)
    )
    assert f"error: {zipped}: its member bad.log: not unpacked: " in result.output
    assert sql(
        out, "select regexp_extract(source, '[^/]+$'), count(*) from events group by 1 order by 1"
    ) == [
        ("a.log", 3),
        ("good.log", 3),
    ]
    unread = sql(out, "select source, format from sources where format = 'unreadable' order by 1")
    assert unread == [(f"{tar}/../../escape.log", "unreadable"), (f"{zipped}/bad.log", "unreadable")]


def test_n2_an_archive_inside_a_folder_is_named_not_read_as_text(tmp_path: Path):
    import tarfile

    folder = tmp_path / "logs"
    write_log(folder / "a.log")
    with tarfile.open(folder / "old-logs.tar.bz2", "w:bz2") as tar:  # a suffix NOT_LOGS does not hold
        tar.add(folder / "a.log", "a.log")
    (folder / "old-logs.tar.bz2").rename(folder / "old-logs.1")
    out = tmp_path / "out"
    result = run(app, ["ingest", str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output
    said = "a tar.bz2 archive inside a folder is not unpacked (name it on the command line to read it)"
    assert f"skipped: {folder / 'old-logs.1'}: {said}" in result.output
    assert sql(out, "select count(*), count(distinct source) from events") == [(3, 1)]


def test_n2_a_zip_bomb_is_refused_whole(tmp_path: Path):
    import zipfile

    from logcorr.inputs.source import UNPACK_FLOOR

    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.log", bytes(UNPACK_FLOOR + (1 << 20)))
    assert bomb.stat().st_size < 200_000
    result = run(app, ["ingest", str(bomb), str(write_log(tmp_path / "a.log")), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert (
        f"error: {bomb}: not read: it unpacks to more than 200 times its size ({UNPACK_FLOOR:,} bytes)"
        in (result.output)
    )
    assert sql(tmp_path / "out", "select count(*) from events") == [(3,)]


# -- N4: query's table, vertical and markdown forms stream ------------------------------------------

NUMBERS = "SELECT range AS n, repeat('x', range::int) AS s FROM range({rows}) ORDER BY n"


@pytest.fixture(scope="module")
def tiny_out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("n4")
    out = folder / "out"
    result = run(app, ["ingest", str(write_log(folder / "a.log")), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_n4_a_table_is_laid_out_from_its_first_window_and_streamed_batch_by_batch(tiny_out: Path):
    from logcorr.analysis import saved

    stream = saved.QueryStream(tiny_out, NUMBERS.format(rows=20), fmt="table", batch_rows=7, window_rows=7)
    pieces = list(stream)
    assert len(pieces) == 4  # the head and rows 0-6, rows 7-13, rows 14-19, the count
    lines = "".join(pieces).splitlines()
    # widths from rows 0-6 (n: 1, s: 6); a later, wider cell pushes its line on, whole
    assert lines[:3] == ["n  s", "-  ------", "0"]
    assert lines[8:10] == ["6  xxxxxx", "7  xxxxxxx"]
    assert lines[12] == "10  xxxxxxxxxx" and lines[-1] == "(20 rows)" and len(lines) == 23
    vertical = "".join(saved.QueryStream(tiny_out, NUMBERS.format(rows=3), fmt="vertical", batch_rows=2))
    assert vertical.splitlines()[-3:] == ["n | 2", "s | xx", "(3 rows)"]
    assert "-[ row 3 ]" in vertical and vertical.count("-[ row") == 3
    # a window holding every row gives the table as before: widths of all rows
    whole = "".join(saved.QueryStream(tiny_out, NUMBERS.format(rows=20), fmt="table", batch_rows=7))
    assert whole.splitlines()[:2] == [" n  s", "--  -------------------"]


def test_n4_query_never_holds_the_whole_result_in_any_form(tiny_out: Path, monkeypatch):
    import tracemalloc

    from logcorr.analysis import saved

    def peak(rows: int, fmt: str) -> int:
        sql = NUMBERS.format(rows=rows).replace("range::int", "range % 50")
        tracemalloc.start()
        try:
            for _ in saved.QueryStream(tiny_out, sql, fmt=fmt, batch_rows=1000, window_rows=1000):
                pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    for fmt in ("table", "vertical", "markdown"):
        small, big = peak(2_000, fmt), peak(20_000, fmt)
        assert big < 2 * small, (fmt, small, big)  # ten times the rows, not ten times the memory
    # the CLI streams every form: it never asks for the whole frame
    monkeypatch.setattr(saved, "query", None)
    monkeypatch.setattr(saved, "render_query", None)
    for fmt, tail in (("table", "(5 rows)"), ("vertical", "(5 rows)"), ("markdown", "| 4 | xxxx |")):
        got = run(app, ["query", NUMBERS.format(rows=5), "-d", str(tiny_out), "-f", fmt])
        assert got.exit_code == 0, got.output
        assert got.output.splitlines()[-1] == tail


# -- N8: a one-line JSON document: progress in the file's bytes, and the lines' paths looked up once ----


def otlp_document(path: Path, records: int) -> Path:
    body = "[2025-10-29 21:40:00 TP0] Decode batch, #running-req: 1, #token: 5"
    logs = [
        {"timeUnixNano": str(1761774000000000000 + i), "body": {"stringValue": body}} for i in range(records)
    ]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "sglang-decode"}}]}
    path.write_text(
        json.dumps({"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": logs}]}]})
    )
    return path


def test_n8_progress_on_a_one_line_document_counts_the_file_s_bytes_never_past_its_size(
    tmp_path, monkeypatch
):
    import re

    from logcorr import ingest as ingest_module
    from logcorr.inputs import exports, source, text
    from logcorr.pipeline import read

    doc = otlp_document(tmp_path / "otlp.json", 3000)
    size = doc.stat().st_size
    monkeypatch.setattr(ingest_module, "PROGRESS_FROM", 0)
    monkeypatch.setattr(exports, "MAX_LINE_BYTES", 1 << 16)  # read in pieces, as a 125 MB one is
    monkeypatch.setattr(exports, "CUT_ITEMS", 500)
    monkeypatch.setattr(text, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(read, "BATCH_ROWS", 500)  # records enriched (and counted) a few pieces at a time
    said: list[str] = []
    result = ingest_module.ingest([doc], tmp_path / "out", progress=said.append)
    assert result.rows["events"] == 3000
    shares = [int(m[1]) for line in said if (m := re.search(r" of 0 MB \((\d+)%\)", line))]
    assert len(shares) >= 2 and shares == sorted(shares) and shares[-1] == 100, said
    assert not any("MB read" in line for line in said), said  # the form once the count passed the size
    (counted,) = sql(tmp_path / "out", "select bytes from sources")[0]
    assert counted > size  # the flattened lines it read are longer than the document: scaled, not shown


def test_n8_a_log_platform_s_lines_look_up_only_the_paths_their_keys_can_hold(monkeypatch):
    import polars as pl

    from logcorr.inputs import envelopes

    lines = [
        '{"line":"[2025-10-29 21:40:00 TP0] x","timestamp":"1761774000000000000","labels":{"unit":"u","pod":"p"}}',
        '{"date":1761773680.073,"log":"y","stream":"stderr","kubernetes":{"pod_name":"p1","container_name":"c",'
        '"namespace_name":"n","host":"h"}}',
        '{"_source":{"@timestamp":"2025-10-29T21:40:00Z","message":"z","kubernetes":{"pod":{"name":"p2"}}}}',
        '{"message":"v","timestamp":"2025-10-29T21:40:01Z","host":"h2","_SYSTEMD_UNIT":"s.service","_PID":"7"}',
        '{"_msg":"w","_time":"2025-10-29T21:40:02Z","_stream":"{pod=\\"p3\\",container=\\"c3\\"}"}',
        '{"@timestamp":"2025-10-29T21:40:03Z","msg":"m"}',
    ]
    otlp = pl.Series([lines[0]] * 3)
    assert envelopes.keys_in(otlp) == {
        "line",
        "timestamp",
        "labels",
        "pod",
    }  # "pod" of labels too: a superset
    assert envelopes.keys_in(pl.Series(['{"\\u0074imestamp":"2025-10-29T21:40:03Z","line":"e"}'])) is None
    for chunk in (pl.Series(lines), otlp, pl.Series(lines[1:2]), pl.Series(lines[4:])):
        pruned = envelopes.parse_lines(chunk, "log-export")
        monkeypatch.setattr(envelopes, "keys_in", lambda lines: None)  # every path looked up
        assert pruned.equals(envelopes.parse_lines(chunk, "log-export"))
        monkeypatch.undo()
    got = envelopes.parse_lines(pl.Series(lines), "log-export")
    assert got["pod"].to_list() == ["p", "p1", "p2", None, "p3", None]
    assert got["unit_field"].to_list() == ["u", None, None, "s.service", None, None]
    assert got["ts"].dt.second().to_list() == [0, 40, 0, 1, 2, 3]


def test_n3_combine_shows_a_newline_in_a_folder_s_name_escaped_in_its_wrote_line_and_its_errors(tmp_path):
    forged = "\n  forged: line"
    outs = []
    for host in ("h1", "h2"):
        outs.append(tmp_path / f"{host}{forged}")
        got = run(
            app, ["ingest", str(write_log(tmp_path / f"{host}.log")), "--origin", host, "-o", str(outs[-1])]
        )
        assert got.exit_code == 0, got.output
    dest = tmp_path / f"all{forged}"
    got = run(app, ["combine", *map(str, outs), "-o", str(dest)])
    assert got.exit_code == 0, got.output
    (wrote,) = got.output.splitlines()  # one line, whatever the names
    assert wrote.startswith(f"wrote {tmp_path}/all\\n  forged: line: 2 OUTs, ")
    assert sql(dest, "select count(*) from events") == [(6,)]
    for args in ([str(outs[0]), str(tmp_path / f"gone{forged}")], [str(outs[0]), str(outs[1]), str(outs[1])]):
        failed = run(app, ["combine", *args, "-o", str(tmp_path / "x")])
        assert failed.exit_code == 1
        (line,) = failed.output.splitlines()  # one line, whatever the names
        assert line.startswith("logcorr: ") and "\\n  forged: line" in line
