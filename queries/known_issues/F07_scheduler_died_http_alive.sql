-- id: F7
-- title: A scheduler process died while its HTTP server kept answering (#18421: an NCCL C++ abort goes unnoticed; fixed by #18582)
-- weight: 1
-- links: https://github.com/sgl-project/sglang/issues/18421, https://github.com/sgl-project/sglang/pull/18582, https://github.com/sgl-project/sglang/issues/29144
-- affects: before #18582 (merged 2026-03-29) the death goes unnoticed; after it SGLang logs "Subprocess … crashed with exit code … Triggering SIGQUIT" and stops
-- needs: any engine
-- config: true
-- shows: watchdog_timeout, dist_timeout, nnodes
-- fixed_in:
-- fix: #18582 (merged 2026-03-29; the notes map no release to it): the crash is noticed and the server stops; #21486 (node_rank >= 1 health server) not merged
-- workaround: a liveness probe that generates; --dist-timeout to bound collective waits
-- explains: the scheduler subprocess was killed below Python (std::terminate on an NCCL timeout), no SIGQUIT reached the parent, requests hang without an error
-- evidence: a scheduler's death (SGLang's SubprocessWatchdog line "Subprocess scheduler_N … crashed with
--   exit code", or PyTorch's NCCL watchdog timeout) and, 10 s or more after it, its role's HTTP server
--   still answering 200 (/health or requests): the zombie state itself. The crash line alone is not a
--   match: after #18582 it is followed by SIGQUIT and the server stopping, the fix at work.
WITH deaths AS (
    -- the line is parsed into watchdogs (watchdog_kind subprocess_crashed, nccl_watchdog): a small table
    SELECT event_id, ts, host, role, source, source_pos, watchdog_kind, exit_code
    FROM watchdogs
    WHERE watchdog_kind IN ('subprocess_crashed', 'nccl_watchdog') AND role IN ('prefill', 'decode', 'engine', 'unknown')
),
alive AS (
    SELECT d.event_id, count(q.event_id) AS answers, max(q.ts) AS last_ts
    FROM deaths AS d JOIN requests AS q
      -- its role's server, or an access line no role was read for (an engine's uvicorn line names none)
      ON (q.role = d.role OR q.role = 'unknown') AND q.status = 200 AND q.ts >= d.ts + INTERVAL 10 SECOND
     -- the same server: the same host, or where a host is not known the same input (two pasted
     -- excerpts without a host are not one server)
     AND (q.host = d.host OR ((d.host IS NULL OR q.host IS NULL) AND q.source = d.source))
    GROUP BY d.event_id
)
SELECT d.event_id, d.ts, d.host, d.role, d.source, d.source_pos,
       format('{} {}; its HTTP server answered {} request(s) with 200 in the {} s after it',
              d.role,
              CASE d.watchdog_kind WHEN 'subprocess_crashed' THEN 'scheduler subprocess crashed with exit code ' || d.exit_code
                                   ELSE 'NCCL watchdog timeout on a scheduler' END,
              a.answers, round((epoch_us(a.last_ts) - epoch_us(d.ts)) / 1e6, 1)) AS what
FROM deaths AS d JOIN alive AS a USING (event_id)
