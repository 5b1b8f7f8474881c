"""Shared fixtures: where the real cases and the sample incident live."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "cases"  # real excerpts of public reports, each with its source
SAMPLE = ROOT / "sample_logs"


def need_cases() -> Path:
    if not CASES.exists():
        pytest.skip(f"real cases not found at {CASES}")
    return CASES


def need_journalctl() -> None:
    if not shutil.which("journalctl"):
        pytest.skip("journalctl not installed")


@pytest.fixture
def cases() -> Path:
    return need_cases()


# --- the case cache: each input ingested once per test run -------------------------------------------
# ``ingested(*inputs, **options)`` is the OUT of ``ingest(inputs, OUT, **options)``, built once per test
# run and shared by every test and every xdist worker that asks for the same inputs and options: under
# the run's temporary folder (``LOGCORR_CASE_CACHE`` names another, to keep it across runs: not one of
# pytest's numbered folders, which later sessions delete once their run is over), keyed by the
# inputs' paths and bytes, the options and the code's version (logcorr/**, parsers/**, queries/**), built
# under a file lock by whichever worker asks first. The OUT is for reading only: its fingerprint (every
# file's size and mtime) is checked on each use and at the session's end, so a test that writes into it
# fails (modes would not stop root, and would follow a copy). A test that writes takes ``ingested_copy``.

CODE = ("logcorr", "parsers", "queries")
# The run's cache folder, set by the session fixture in the environment: pytest loads this file as
# ``conftest`` and the tests import it again as ``tests.conftest``, two modules that share no globals.
RUN_CACHE = "LOGCORR_TEST_RUN_CASE_CACHE"
VIEWS_CACHE = "LOGCORR_CACHE"  # logcorr.analysis.database.CACHE_ENV
_used: dict[Path, dict] = {}  # the cached OUTs this process handed out → their fingerprint


@functools.cache
def code_version() -> str:
    """A digest of the code an OUT depends on: every file under logcorr/, parsers/ and queries/ (the
    Python, the saved SQL, the report's schema), by path and bytes."""
    h = hashlib.sha256()
    for top in CODE:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".sql", ".json") and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _digest_input(h, path: Path) -> None:
    h.update(str(path).encode() + b"\0")  # as given: the source names in OUT
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest() if f.exists() else b"missing")


def cache_key(inputs: tuple[Path, ...], options: dict) -> str:
    h = hashlib.sha256(code_version().encode())
    for path in inputs:
        _digest_input(h, Path(path))
    h.update(repr(sorted(options.items())).encode())
    first = Path(inputs[0]) if inputs else Path("none")
    return f"{first.parent.name}-{first.name[:24]}-{h.hexdigest()[:20]}"


def _fingerprint(out: Path) -> dict[str, list[int]]:
    return {
        str(p.relative_to(out)): [p.stat().st_size, p.stat().st_mtime_ns]
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def case_cache_root() -> Path:
    """The folder of the cached OUTs: ``LOGCORR_CASE_CACHE``, else ``case-cache`` in the run's temporary
    folder, shared by its xdist workers (each worker's ``basetemp`` is a folder of the run's)."""
    if os.environ.get("LOGCORR_CASE_CACHE"):
        return Path(os.environ["LOGCORR_CASE_CACHE"])
    if RUN_CACHE not in os.environ:  # called outside a pytest session (a script): a folder of its own
        return Path(tempfile.gettempdir()) / f"logcorr-case-cache-{os.getuid()}"
    return Path(os.environ[RUN_CACHE])


@pytest.fixture(scope="session", autouse=True)
def _case_cache(tmp_path_factory) -> Iterator[Path]:
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "case-cache"
    root.mkdir(parents=True, exist_ok=True)
    os.environ[RUN_CACHE] = str(root)
    # DuckDB files of views kept between processes (``database.template_cache``): the run's own, not
    # the user's ~/.cache, shared by the xdist workers
    before = os.environ.get(VIEWS_CACHE)
    os.environ[VIEWS_CACHE] = str(root.parent / "views-cache")
    yield root
    os.environ.pop(RUN_CACHE, None)
    if before is None:
        os.environ.pop(VIEWS_CACHE, None)
    else:
        os.environ[VIEWS_CACHE] = before


def ingested(*inputs: Path, **options) -> Path:
    """The OUT of ``ingest(inputs, OUT, **options)`` (``opts``, ``captured_at``, ``origin``, …), built once
    per test run and shared: read it only (queries, report, findings, timeline to a file elsewhere).

    Raises:
        AssertionError: a test wrote into this OUT since it was built (use ``ingested_copy``).
        Whatever ``ingest`` raises (nothing is cached then).
    """
    from logcorr.ingest import ingest

    root = case_cache_root()
    key = cache_key(tuple(inputs), options)
    folder, out = root / key, root / key / "out"
    stamp = folder / "fingerprint.json"
    if not stamp.exists():
        root.mkdir(parents=True, exist_ok=True)
        with open(root / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds, the others wait for it
            if not stamp.exists():
                if folder.exists():  # a build killed half-way
                    shutil.rmtree(folder)
                folder.mkdir()
                ingest(list(inputs), out, **options)
                tmp = folder / "fingerprint.json.tmp"
                tmp.write_text(json.dumps(_fingerprint(out)))
                tmp.replace(stamp)
    want = _used.get(out)
    if want is None:
        want = _used[out] = json.loads(stamp.read_text())
    _check_untouched(out, want)
    return out


def _check_untouched(out: Path, want: dict) -> None:
    got = _fingerprint(out)
    if got != want:
        changed = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
        raise AssertionError(
            f"a test wrote into the shared OUT {out} (changed: {changed[:5]}): "
            "read a cached OUT only; take tests.conftest.ingested_copy() to write"
        )


def ingested_copy(dest: Path, *inputs: Path, **options) -> Path:
    """A writable copy at ``dest`` of the shared OUT of ``ingested(*inputs, **options)``: for a test that
    appends to it, rebuilds its database, damages it."""
    shutil.copytree(ingested(*inputs, **options), dest)
    return dest


def pytest_sessionfinish(session, exitstatus) -> None:
    """Every shared OUT this process handed out is as it was built (a test that wrote into one fails
    the run, even when no later test read it)."""
    used = {}
    for name in ("conftest", "tests.conftest"):  # the same file loaded twice (see RUN_CACHE)
        used.update(getattr(sys.modules.get(name), "_used", {}))
    for out, want in used.items():
        try:
            _check_untouched(out, want)
        except AssertionError as e:
            print(f"\n{e}", file=sys.stderr)
            session.exitstatus = 1


def sample_with_dumps() -> Path:
    """The shared, read-only OUT of the sample journal with the eight py-spy dumps taken at 21:40:10 (bare
    dump files, their time given): ``ingested`` once per run for every test that reads it."""
    need_journalctl()
    dumps = sorted((SAMPLE / "pyspy").glob("*_214010.txt"))
    return ingested(SAMPLE / "journal", *dumps, captured_at="2025-10-29 21:40:10")


def ingested_alone(workdir: Path, batch: Path, prefix: str) -> Path:
    """The shared, read-only OUT of the one case file of ``batch`` whose name starts with ``prefix``,
    ingested alone (once per test run: ``ingested``). ``workdir`` is not used any more (kept for the
    callers)."""
    (path,) = batch.glob(f"{prefix}_*")
    return ingested(path)


def case_body(batch: Path, prefix: str) -> str:
    """The text of the case file of ``batch`` whose name starts with ``prefix``, its ``# source``/``# note``
    lines off: the paste as a blind evaluation read it."""
    path = next(batch.glob(f"{prefix}_*.log"))
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith(("# source:", "# note:"))) + "\n"


def ingested_body(tmp_path: Path, batch: Path, prefix: str) -> Path:
    """The OUT ``tmp_path/prefix`` of ``case_body(batch, prefix)`` ingested alone (as ``prefix.log``)."""
    from logcorr.ingest import ingest

    log = tmp_path / f"{prefix}.log"
    log.write_text(case_body(batch, prefix))
    ingest([log], tmp_path / prefix)
    return tmp_path / prefix


def case_records(batch: Path, prefix: str):
    """``records_from_text`` of ``case_body(batch, prefix)``, named ``prefix.log``: the events rows of the
    paste as ingest reads it, in memory."""
    from logcorr.ingest import records_from_text

    return records_from_text(case_body(batch, prefix), f"{prefix}.log")


def rows_at(ev, line: int) -> list[dict]:
    """The rows of ``ev`` (events) whose record starts at ``line`` of its input, in event order."""
    import polars as pl

    return ev.filter(pl.col("source_pos") == f"line {line}").sort("event_id").to_dicts()


def is_shared(out: Path) -> bool:
    """True for an OUT of ``ingested`` (read only, never changed once built)."""
    return Path(out).resolve().is_relative_to(case_cache_root().resolve())


@functools.lru_cache(maxsize=8)
def _shared_connection(out: Path) -> tuple:
    """A connection over a shared OUT without saved views, and the names of those added since."""
    from logcorr.analysis import saved

    return saved.connect(out, only=set()), set()


def query(out: Path, text: str):
    """``saved.query(out, text)``: a saved query's name or SQL over OUT's tables, as a DataFrame. On a
    shared OUT of ``ingested`` every call of a process reads one connection, as the OUT never changes,
    which gets the saved views a query reads when it first needs them (binding all is 0.4 s of CPU); any
    other OUT gets a connection a call."""
    from logcorr.analysis import saved

    if not is_shared(out):
        return saved.query(out, text)
    con, made = _shared_connection(Path(out))
    need = saved.views_for([text], saved.load_saved()) - made
    saved.add_views(con, need, saved.load_saved())
    made |= need
    return saved.query(out, text, con=con)


def sql(out: Path, text: str) -> list[tuple]:
    """The rows of ``text`` (SQL over OUT's tables) as tuples (``query``)."""
    return query(out, text).rows()


@functools.cache
def shared_gather(out: Path) -> dict:
    """``report.gather(out)`` of a shared OUT of ``ingested`` (every query the report reads, its
    findings among them), run once per process (2-3 s of CPU) for every test that reads them. Read
    only: the frames are shared."""
    from logcorr.render import report

    assert is_shared(out), f"{out}: not an OUT of ingested (it may change: call report itself)"
    return report.gather(out)


@functools.cache
def shared_report(out: Path) -> str:
    """``report(out)`` of a shared OUT of ``ingested``, drawn once per process from ``shared_gather``."""
    from logcorr.render import report

    results = shared_gather(out)
    with report.drawn(results):
        return report.markdown(out, results)


def case_group(path: Path) -> pytest.MarkDecorator:
    """The xdist group of a case file of ``CASES``: the tests of every module reading its shared OUT run
    on one worker (``--dist loadgroup``), where its report is gathered once (``shared_gather``)."""
    return pytest.mark.xdist_group(f"case-{Path(path).resolve().relative_to(CASES.resolve())}")


def cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m logcorr.cli ARGS`` in a child process (its own signals, exit status, stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "logcorr.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def damaged_sample_journal(dest: Path) -> Path:
    """A copy of the sample journal at ``dest`` with 64 KiB of random bytes (seed 7) in the middle of its
    archived file: damage journalctl passes over without a word (the reliability trial's)."""
    need_journalctl()
    shutil.copytree(SAMPLE / "journal", dest)
    archived = next(dest.glob("*/system@*.journal"))
    data = bytearray(archived.read_bytes())
    m = len(data) // 2
    data[m : m + 65536] = random.Random(7).randbytes(65536)
    archived.write_bytes(bytes(data))
    return dest


def open_db(out: Path):
    """``OUT/logcorr.duckdb`` opened as docs/queries.md says from outside OUT (``duckdb -cmd "SET
    file_search_path='OUT'" OUT/logcorr.duckdb``): its views read OUT's Parquet files by paths relative
    to OUT, as ``cd OUT && duckdb logcorr.duckdb`` does. A file of the tables copied in opens the same."""
    import duckdb

    con = duckdb.connect(str(Path(out) / "logcorr.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(Path(out).resolve())])
    return con
