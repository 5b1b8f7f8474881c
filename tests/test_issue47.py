"""Issue 47, an outsider's trial (/tmp/s23/trial4.md): the small causes N1, N3, N7, N9 and F23, each
reproduced and its fix asserted (N5 and N6, of ``combine``, are in test_combine.py)."""

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
