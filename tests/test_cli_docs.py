"""Every command of the CLI is documented in the README, and its --help runs (as sqlite-utils does)."""

from __future__ import annotations

import re

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from logcorr.cli import app
from tests.conftest import ROOT

COMMANDS = sorted(get_command(app).commands)


def test_the_cli_has_the_commands_of_design_md():
    assert {"ingest", "query", "report", "timeline", "export"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_is_in_the_readme_and_has_help(name):
    readme = (ROOT / "README.md").read_text()
    assert f"logcorr {name}" in readme, f"logcorr {name} is not documented in README.md"
    result = CliRunner().invoke(app, [name, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_names_its_value_in_words(name):
    """An option's value is named (FORMAT, FILE, TIME, N), not by the Python type typer would print
    (``<str>``, ``<path>``, ``<list[str]>``); arguments too (tests/test_issue46.py)."""
    text = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"}).output
    options = [m[1] for m in re.finditer(r"(?m)^\s*(-\S.*?)(?:\s{2,}|$)", text)]  # "-n, --context N"
    assert options and [o for o in options if "<" in o] == []
