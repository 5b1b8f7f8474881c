"""The README's commands as written (issue 46: "the README's two commands on a fresh clone, and every
recipe of 'Using it after an incident' that can run on the sample, give the sample's true answers").
Each command line is taken from README.md itself and run by bash in a folder holding the sample, with
``logcorr`` this checkout's CLI; the answers are sample_logs/README.md's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLE, need_journalctl

# one worker runs the module (pytest-xdist --dist loadgroup): the README's quick start run once (the
# folder fixture)
pytestmark = pytest.mark.xdist_group("readme_recipes")

README = (ROOT / "README.md").read_text()
# the recipes that read the incident folder the quick start wrote (the others name inputs of a real
# host: a bundle, /var/log/journal, a pod folder; a PNG needs Chromium)
RUNS_ON_THE_SAMPLE = re.compile(
    r"^logcorr (?:query|show|report|tables|export|timeline -d incident -o \S+\.html)\b"
)


def _quick_start() -> list[str]:
    block = re.search(r"## Quick start.*?```sh\n(.*?)\n```", README, re.S).group(1)
    line = block.splitlines()[-1]
    return [c for c in line.split(" && ") if c.startswith("logcorr ")]


def _recipes() -> list[str]:
    block = re.search(r"## Using it after an incident\n\n```sh\n(.*?)\n```", README, re.S).group(1)
    commands = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [c for c in commands if RUNS_ON_THE_SAMPLE.match(c)]


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    shim = f'logcorr() {{ "{sys.executable}" -m logcorr.cli "$@"; }}; '
    return subprocess.run(
        ["bash", "-c", shim + command], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    need_journalctl()
    here = tmp_path_factory.mktemp("clone")
    (here / "sample_logs").symlink_to(SAMPLE)
    for command in _quick_start():
        done = _run(command, here)
        assert done.returncode == 0, (command, done.stderr[-2000:])
    return here


def test_the_quick_start_tells_the_sample_incident(folder):
    assert [c.split()[1] for c in _quick_start()] == ["ingest", "report", "timeline"]
    report = _run("logcorr report -d incident", folder).stdout
    assert "**What happened**: Decode wedged at 2025-10-29 21:34:47 UTC" in report
    assert "with 22 request(s) running" in report and "502×137" in report
    assert "--disable-overlap-schedule" in report
    assert (folder / "incident.html").stat().st_size > 1_000_000


def test_every_recipe_that_reads_the_incident_folder_runs_as_written(folder):
    recipes = _recipes()
    assert len(recipes) >= 10, recipes
    said = {}
    for command in recipes:
        done = _run(command, folder)
        assert done.returncode == 0, (command, done.stderr[-2000:])
        said[command] = done.stdout
    assert "4384674655194745451" in said["logcorr query abort_to_assert -d incident"]  # the asserted room
    assert "decode" in said["logcorr query wedge -d incident -c role,stopped_ts,verdict -n 5"]
    assert "event 4219925627408007" in said["logcorr show 4219925627408007 -d incident"]
    assert "Decode wedged at 2025-10-29 21:34:47 UTC" in (folder / "report.md").read_text()
    summary = json.loads(said["logcorr report -d incident --format json"])["summary"]
    assert summary[0].startswith("**What happened**: Decode wedged at 2025-10-29 21:34:47 UTC")
    assert said["logcorr report -d incident --format issue"].startswith("# [Bug] Decode wedged")
    trace = json.loads((folder / "trace.json").read_text())
    assert trace["traceEvents"]
