"""``logcorr combine`` (issue 49): several hosts' OUTs into one folder whose tables are one file each,
answering as the copy recipe before it and as each host alone; the timeline of many hosts."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from logcorr.analysis import database, saved
from logcorr.cli import app
from logcorr.combine import CombineError, combine
from logcorr.ingest import ingest

# one worker runs the module (pytest-xdist --dist loadgroup): the three hosts' days made and ingested once
# (the fleet fixture)
pytestmark = pytest.mark.xdist_group("combine")

ROOT = Path(__file__).resolve().parents[1]
HOSTS = ("gpu-node-00", "gpu-node-01", "gpu-node-02")


def _make_day(out: Path, seed: int, host: str) -> dict:
    spec = importlib.util.spec_from_file_location("make_day", ROOT / "bench" / "make_day.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_day", mod)  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod.make_day(
        6_000, out, seed=seed, host=host, journal=False, json_capture=False, log=lambda s: None
    )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> list[Path]:
    """Three hosts' OUTs, each a day of bench/make_day.py with its own seed and host name."""
    work = tmp_path_factory.mktemp("fleet")
    outs = []
    for i, host in enumerate(HOSTS):
        day = _make_day(work / f"day-{host}", 1000 + i, host)
        assert day["host"] == host
        ingest([work / f"day-{host}" / "day.export"], work / host)
        outs.append(work / host)
    return outs


@pytest.fixture(scope="module")
def combined(fleet, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("all") / "all"
    result = CliRunner().invoke(app, ["combine", *map(str, fleet), "-o", str(dest)])
    assert result.exit_code == 0, result.output
    assert f"wrote {dest}: 3 OUTs, " in result.output
    return dest


def _rows(out: Path, table: str) -> int:
    return json.loads((out / "manifest.json").read_text())["rows"][table]


def test_each_table_is_one_file_holding_every_host_s_rows(fleet, combined):
    for table in ("events", "batches", "aborts", "stacks"):
        files = list((combined / table).rglob("*.parquet"))
        assert len(files) == 1 and files[0].parent.name == "origin=combined"
        assert (
            pl.read_parquet(files[0]).height == sum(_rows(o, table) for o in fleet) == _rows(combined, table)
        )
    per_host = saved.query(combined, "SELECT host, count(*) AS n FROM events GROUP BY host ORDER BY host")
    assert per_host.rows() == [(h, _rows(o, "events")) for h, o in zip(HOSTS, fleet, strict=True)]
    manifest = json.loads((combined / "manifest.json").read_text())
    assert manifest["combined_from"] == [str(o) for o in fleet]
    assert sorted(manifest["next_event_id"]) == list(HOSTS)  # --append continues each origin's ids
    assert [i["out"] for i in manifest["inputs"]] == [str(o) for o in fleet]


def test_lone_batch_lines_follow_every_other_record_each_part_in_its_order(fleet, combined):
    """``combine.LAST``: the records that are a batch line alone come after all others, so that they fill
    row groups of their own; on each side the hosts' rows keep the order of the OUTs and of each part."""
    lone = pl.col("kind").eq("batch") & pl.col("n_lines").eq(1)
    (file,) = (combined / "events").rglob("*.parquet")
    together = pl.read_parquet(file).with_columns(lone.fill_null(False).alias("lone"))
    flags = together["lone"].to_list()
    assert 0 < flags.index(True) and all(flags[flags.index(True) :])  # one switch: others, then lone lines
    parts = [pl.read_parquet(p) for o in fleet for p in sorted((o / "events").rglob("*.parquet"))]
    alone = pl.concat(parts, how="diagonal_relaxed").with_columns(lone.fill_null(False).alias("lone"))
    for side in (False, True):
        assert (
            together.filter(pl.col("lone") == side)["event_id"].to_list()
            == alone.filter(pl.col("lone") == side)["event_id"].to_list()
        )
    assert together.height == alone.height and together["lone"].sum() > together.height // 2


@pytest.mark.parametrize("name", ["abort_to_assert", "clock_offsets", "room_story", "unit_lifecycle"])
def test_per_host_queries_answer_as_each_host_alone(fleet, combined, name):
    """The saved queries that key their rows by host or room: the combined answer is every host's own."""
    alone = pl.concat([saved.query(o, name) for o in fleet], how="vertical_relaxed")
    together = saved.query(combined, name)
    assert together.height == alone.height > 0
    assert together.sort(together.columns, nulls_last=True).equals(alone.sort(alone.columns, nulls_last=True))


def test_every_rank_of_every_host_has_its_last_batch(fleet, combined):
    lanes = saved.query(combined, "last_batch_per_rank").select("host", "role", "tp_rank").unique()
    alone = pl.concat(
        [saved.query(o, "last_batch_per_rank").select("host", "role", "tp_rank") for o in fleet]
    )
    assert sorted(lanes.rows()) == sorted(alone.unique().rows())
    assert lanes.height == 3 * 2 * 8  # 3 hosts, prefill and decode, TP0-TP7
    assert set(lanes["host"]) == set(HOSTS)


def test_every_saved_query_answers_as_the_copy_recipe(fleet, combined, tmp_path):
    """The recipe before issue 49 (``cp -r`` each OUT into one folder) and ``combine`` hold the same rows:
    every saved query gives the same answer (lists compared as sets: their order is DuckDB's)."""
    copied = tmp_path / "copied"
    copied.mkdir()
    for out in fleet:
        shutil.copytree(out, copied, dirs_exist_ok=True)
    queries = saved.load_saved()
    con_a, con_b = saved.connect(copied, queries), saved.connect(combined, queries)  # binding: 0.5 s each
    for name in queries:
        a = saved.query(copied, name, saved=queries, con=con_a)
        b = saved.query(combined, name, saved=queries, con=con_b)
        lists = [c for c, t in a.schema.items() if isinstance(t, pl.List)]
        a, b = (f.with_columns(pl.col(lists).list.sort()).drop("summary", strict=False) for f in (a, b))
        assert a.sort(a.columns, nulls_last=True).equals(b.sort(b.columns, nulls_last=True)), name


def test_one_host_twice_is_refused_naming_both_parts(fleet, tmp_path):
    twice = tmp_path / "twice"
    shutil.copytree(fleet[0], twice)
    with pytest.raises(CombineError, match=r"two separate ingests of one origin \(their event ids overlap\)"):
        combine([fleet[0], twice], tmp_path / "all")
    assert not (tmp_path / "all").exists()


def test_a_folder_not_written_by_combine_is_not_replaced(fleet, tmp_path):
    with pytest.raises(CombineError, match="exists and was not written by logcorr combine"):
        combine(fleet[:2], fleet[2])
    assert (fleet[2] / "events").is_dir()


def test_the_combined_folder_opens_in_duckdb_from_inside_a_copy(combined, tmp_path):
    """The documented command, ``cd ALL && duckdb logcorr.duckdb``, on a copy of the folder (a fresh
    process; the original moved away): every host's events."""
    copy = tmp_path / "elsewhere" / "all"
    shutil.copytree(combined, copy)
    code = "import duckdb; print(duckdb.connect('logcorr.duckdb', read_only=True).sql('SELECT count(DISTINCT host) FROM events').fetchall()[0][0])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=copy, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3"
    assert database.points_elsewhere(copy) is None  # relative views: nothing to re-point


def test_the_timeline_of_many_hosts_has_a_lane_per_rank_per_host(combined, tmp_path):
    page = tmp_path / "fleet.html"
    result = CliRunner().invoke(app, ["timeline", "-d", str(combined), "-o", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    for host in HOSTS:
        assert f"{host} · decode TP7" in html and f"{host} · prefill TP0" in html
    assert "gpu-node-00, gpu-node-01, gpu-node-02" in html  # the title names the hosts


@pytest.mark.parametrize("alias", ["same", "link", "slash"])
def test_one_folder_named_twice_is_refused_naming_both(fleet, tmp_path, alias):
    """Issue 47 N5: the same OUT twice (its path, a link to it, ``./x/``) would double every row."""
    second = {"same": str(fleet[0]), "link": str(tmp_path / "alias"), "slash": f"{fleet[0]}/./"}[alias]
    (tmp_path / "alias").symlink_to(fleet[0])
    result = CliRunner().invoke(app, ["combine", str(fleet[0]), second, "-o", str(tmp_path / "all")])
    assert result.exit_code == 1, result.output
    assert f"{fleet[0]} and {Path(second)}: name one folder" in result.output
    assert "read twice" in result.output
    assert not (tmp_path / "all").exists()


def test_all_inside_an_out_or_an_out_inside_all_is_refused(fleet, tmp_path):
    """Issue 47 N6: ALL inside an OUT combined (the OUT's next ingest deletes it), or an OUT inside ALL."""
    inner = fleet[0] / "sub"
    result = CliRunner().invoke(app, ["combine", *map(str, fleet[:2]), "-o", str(inner)])
    assert result.exit_code == 1, result.output
    assert f"{inner}: is inside {fleet[0]}, one of the OUTs combined" in result.output
    assert not inner.exists()
    with pytest.raises(
        CombineError, match=f"{fleet[0]}: is inside {fleet[0].parent}, which combine replaces"
    ):
        combine(fleet[:2], fleet[1].parent)
