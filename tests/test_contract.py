"""The table contract (logcorr/store/schema.py) is what ingest writes, what `logcorr tables` prints and
what docs/tables.md shows: a column added in one place and not the others fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from logcorr.cli import app
from logcorr.ingest import ingest
from logcorr.parsers import sglang_lines
from logcorr.store import schema
from tests.conftest import CASES, ROOT, SAMPLE
from tests.test_scrape import SCRAPE
from tests.test_traces import trace_file

# one worker runs the module (pytest-xdist --dist loadgroup): the OUT of every table's inputs ingested
# once (out)
pytestmark = pytest.mark.xdist_group("contract")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The sample incident, every real case and a collected bundle, so every table has rows of real shapes."""
    folder = tmp_path_factory.mktemp("contract") / "out"
    inputs = [SAMPLE / "journal.export", SAMPLE / "pyspy", CASES / "sglang", CASES / "real2", CASES / "pyspy"]
    inputs.append(ROOT / "tests" / "bundles" / "bundle-vm")  # a logcorr collect bundle: the probes table
    scrape = folder.parent / "metrics_2026-08-04_11-58-42.txt"  # the metrics table
    scrape.write_text(SCRAPE)
    inputs += [scrape, trace_file(folder.parent / "otel_trace.json")]  # the spans table
    time_stats = folder.parent / "time_stats.log"  # the req_time_stats table: no real case prints one yet
    time_stats.write_text("".join(p.sample + "\n" for p in sglang_lines.TIME_STATS_PATTERNS))
    inputs.append(time_stats)
    retractions = folder.parent / "retractions.log"  # the retractions table: batch7/03 is no input here
    retractions.write_text("".join(p.sample + "\n" for p in sglang_lines.RETRACTION_PATTERNS))
    inputs.append(retractions)
    inputs += sorted((CASES / "batch9").glob("13_*.log"))  # the engine_stats table: vLLM's stats lines
    ingest([p for p in inputs if p.exists()], folder)
    return folder


def test_every_written_table_has_exactly_the_contract_columns_and_types(out):
    written = sorted(p.name for p in out.iterdir() if p.is_dir() and any(p.glob("**/*.parquet")))
    assert written == sorted(schema.TABLES)
    for name, table in schema.TABLES.items():
        files = sorted((out / name).glob("**/*.parquet"))
        arrow = pq.read_schema(files[0])
        assert arrow.names == list(table.columns), name
        for column, col in table.columns.items():
            assert col.meaning.strip(), (name, column)
        rows = sum(pq.read_metadata(f).num_rows for f in files)
        assert rows > 0 or name == "batch_seconds", f"{name}: no rows from the sample and the cases"


def test_the_key_of_each_table_names_its_columns():
    for table in schema.TABLES.values():
        assert set(table.key) <= set(table.columns), table.name
        assert table.schema == {c: col.dtype for c, col in table.columns.items()}


def test_logcorr_tables_prints_the_contract():
    result = CliRunner().invoke(app, ["tables"])
    assert result.exit_code == 0
    assert result.output.strip() == schema.describe().strip()
    assert "| bootstrap_room | int64 |" in result.output
    one = CliRunner().invoke(app, ["tables", "rooms"])
    assert one.output.startswith("## rooms") and "## events" not in one.output
    bad = CliRunner().invoke(app, ["tables", "room"])
    assert bad.exit_code == 2 and "no table named room" in bad.output


def test_docs_tables_md_shows_the_contract_as_logcorr_tables_prints_it():
    page = (ROOT / "docs" / "tables.md").read_text()
    section = re.search(r"<!-- tables:begin -->\n(.*?)<!-- tables:end -->", page, re.S)
    assert section, "docs/tables.md has no generated table section"
    assert section.group(1).strip() == schema.describe().replace("## ", "### ").strip(), (
        "docs/tables.md differs from the contract: paste `logcorr tables | sed 's/^## /### /'` between the markers"
    )
