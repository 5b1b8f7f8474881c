"""batch9 (tests/cases/batch9, a blind batch: README written before the first run, EVAL.md the score
before the fixes): each file's body (its ``# source``/``# note`` lines off, as the evaluation read it)."""

from __future__ import annotations

from logcorr.analysis import saved
from logcorr.ingest import ingest
from logcorr.render.report import report
from tests.test_batch8 import BATCH as BATCH8

BATCH = BATCH8.parent / "batch9"


def _body(prefix: str) -> str:
    path = next(BATCH.glob(f"{prefix}_*.log"))
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith(("# source:", "# note:"))) + "\n"


def _ingested(tmp_path, prefix: str):
    log = tmp_path / f"{prefix}.log"
    log.write_text(_body(prefix))
    ingest([log], tmp_path / prefix)
    return tmp_path / prefix


def test_03_a_faulthandler_dump_at_a_segfault_is_where_it_crashed_not_a_py_spy_wait(tmp_path):
    """`Fatal Python error: Segmentation fault` then `Current thread 0x7f2ea0870640`: that thread
    crashed in all_reduce; the dump is CPython's faulthandler's, not py-spy's, and nothing waits."""
    out = _ingested(tmp_path, "03")
    caps = saved.query(out, "SELECT thread_id, thread_state, wait_class FROM captures ORDER BY thread_id")
    assert caps.rows() == [(0x7F2E93FFF640, None, "running"), (0x7F2EA0870640, "current", "all_reduce")]
    (summary,) = saved.query(out, "SELECT summary FROM findings WHERE kind = 'stacks_captured'")["summary"]
    assert summary.startswith(
        'faulthandler dump at the crash ("Fatal Python error: Segmentation fault") of 1 process'
    )
    assert "thread 139838238426688) crashed in all_reduce: all_reduce (" in summary
    text = report(out)
    assert "py-spy dumps" not in text and "bare py-spy output" not in text
    assert "waits in all_reduce" not in text
