"""The report's summary on real case files beyond what tests/cases/*/expect.toml states (each file's main
event, words and traps: run by tests/test_cases_data.py): the impact line of each role in its own clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from logcorr.render import report as report_mod
from tests.conftest import CASES, ingested_alone


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("summaries")


def test_impact_states_each_roles_5xx_in_its_own_clock(workdir):
    """real2/02: the router's two 500s print UTC, the decode server's access line prints no zone."""
    out = ingested_alone(workdir, CASES / "real2", "02")
    lines = report_mod.summary_lines(report_mod.gather(out))
    (impact,) = [line for line in lines if line.startswith("**Impact**")]
    assert "2 router request(s) answered 5xx (500×2, 07:15:26 UTC to 07:15:26 UTC)" in impact
    assert "1 request(s) answered 5xx (500×1, 07:15:26 to 07:15:26)" in impact
