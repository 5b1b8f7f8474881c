-- Question: which requests did each scheduler rank hold, minute by minute, as SGLang's scheduler status
--   logger printed them (SGLANG_LOG_SCHEDULER_STATUS_TARGET=stdout or a folder), and did a rank's
--   running requests stop changing?
-- Tables: events (the JSON lines {"timestamp", "event": "scheduler.status", "rank", "running_rids",
--   "queued_rids"} that log_utils.log_json writes, in a unit's output or in <folder>/<host>_<rank>.log).
-- Columns: ts (the timestamp of the line: datetime.now() of the engine host; printed without a zone
--   and read as UTC unless a journal or runtime timed it), zoned (false: ts is that zoneless local
--   time), host (of the line; else from the file name <host>_<rank>.log when its rank is that of the
--   line), role, rank (the global rank of torch.distributed as printed), running, queued (how many
--   rids), running_rids, queued_rids, unchanged (the same running_rids as the previous status line of
--   this rank with at least one running: nothing finished or started in between), unchanged_since
--   (the first status of that unchanged run), event_id, source, source_pos.
-- Parameters: none.
-- How to read: one row per status line. A wedge shows as ranks whose running_rids stay the same line
--   after line (unchanged, from unchanged_since on) while requests wait in queued_rids; the rids join
--   rooms and request_log (rid). A rank is keyed by host and rank, and by the file for a folder target
--   whose lines name no host (<host>_<rank>.log). Order: host, rank, ts.
WITH lines AS (
    SELECT e.*, TRY_CAST(json_extract(e.message, '$.rank') AS INTEGER) AS rank
    FROM events e
    WHERE e.message LIKE '{%scheduler.status%' AND json_valid(e.message)
      AND json_extract_string(e.message, '$.event') = 'scheduler.status'
),
status AS (
    SELECT e.event_id, e.ts, e.zoned, e.role, e.source, e.source_pos, e.rank,
           coalesce(e.host, CASE WHEN regexp_extract(e.source, '_(\d+)\.log$', 1) = CAST(e.rank AS VARCHAR)
                                 THEN regexp_extract(e.source, '([^/]+)_\d+\.log$', 1) END) AS host,
           CAST(json_extract(e.message, '$.running_rids') AS VARCHAR[]) AS running_rids,
           CAST(json_extract(e.message, '$.queued_rids') AS VARCHAR[]) AS queued_rids
    FROM lines e
),
marked AS (
    SELECT *,
           len(running_rids) > 0
           AND list_sort(running_rids) = list_sort(lag(running_rids) OVER w) AS unchanged
    FROM status
    WINDOW w AS (PARTITION BY host, source, rank ORDER BY ts, event_id)
),
runs AS (
    SELECT *, sum(CASE WHEN unchanged THEN 0 ELSE 1 END) OVER (PARTITION BY host, source, rank
                                                             ORDER BY ts, event_id) AS run_no
    FROM marked
)
SELECT ts, zoned, host, role, rank, len(running_rids) AS running, len(queued_rids) AS queued,
       running_rids, queued_rids, coalesce(unchanged, false) AS unchanged,
       CASE WHEN unchanged THEN min(ts) OVER (PARTITION BY host, source, rank, run_no) END AS unchanged_since,
       event_id, source, source_pos
FROM runs
ORDER BY host NULLS LAST, rank, ts, event_id
