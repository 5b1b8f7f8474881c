-- question: Which child processes did a parent report dead (vLLM's "Worker … pid N died, exit code: C",
--   SGLang's and Dynamo's "Child process unexpectedly failed with exitcode=C. pid=N", SGLang's liveness
--   monitor "Subprocess … (pid=N) crashed with exit code C"), with which pids and exit codes?
-- tables: watchdogs, tracebacks
-- columns:
--   ts        the first report of the group (UTC; NULL when the lines print no time)
--   end_ts    the last one (UTC)
--   kind      child_exits
--   role      role of the records (the parent's)
--   host      host
--   ranks     the ranks that logged them, e.g. [TP0]
--   n         reports (one per dead child)
--   summary   the finding in words: how many children, their pids and exit codes as printed (a negative
--             code is Python's multiprocessing word for a signal: -6 killed by signal 6), when
--   evidence  events.event_id of every report
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per (role, host): watchdogs rows of kind subprocess_crashed. A report within 60 s after a
--   crash's traceback is said by that crash (queries/findings/crash.sql: "then a subprocess crashed"), not
--   here: the same rule as crash.sql's (a traceback titled by who raised, or with a scheduler loop's or
--   init frames).
WITH crash_tb AS (
    SELECT ts FROM tracebacks
    WHERE ts IS NOT NULL
      AND (component IS NOT NULL
           OR regexp_matches(coalesce(traceback, ''), ', in (run_scheduler_process|event_loop_\w+|forward_thread_func\w*)\b')
           OR regexp_matches(coalesce(traceback, ''), ', in (__init__|init_\w+|_init_\w+)\b'))
),
w AS (
    SELECT w.*,
           concat_ws(' ', 'DP' || w.dp_rank, 'PP' || w.pp_rank, 'TP' || w.tp_rank, 'EP' || w.ep_rank) AS rank_label,
           coalesce('pid ' || w.target_pid, 'pid not printed')
           || coalesce(' (exit code ' || w.exit_code
                       || CASE WHEN w.exit_code < 0 THEN ': killed by signal ' || (-w.exit_code) ELSE '' END || ')', '')
             AS child
    FROM watchdogs w
    WHERE w.watchdog_kind = 'subprocess_crashed'
      AND NOT EXISTS (SELECT 1 FROM crash_tb t WHERE w.ts BETWEEN t.ts AND t.ts + INTERVAL 60 SECOND)
),
g AS (
    SELECT role, host, min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(child ORDER BY ts NULLS LAST, event_id) AS children,
           list(event_id ORDER BY ts NULLS LAST, event_id) AS evidence
    FROM w GROUP BY ALL
)
SELECT ts, end_ts, 'child_exits' AS kind, role, host, ranks, n,
       n || CASE WHEN n = 1 THEN ' child process' ELSE ' child processes' END || ' reported dead by the parent'
       -- an unknown role is left out, never worded
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(role, 'unknown'), nullif(array_to_string(ranks, ', '), '')), ''), '')
       || CASE WHEN ts IS NULL THEN ' (no time read)'
               WHEN date_trunc('second', end_ts) > date_trunc('second', ts)
                 OR end_ts > ts THEN ' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S.%g UTC') || ' to ' || strftime(end_ts, '%H:%M:%S.%g UTC')
               ELSE ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') END
       || ': ' || CASE WHEN n <= 6 THEN array_to_string(children, ', ')
                       ELSE array_to_string(children[1:6], ', ') || ', …' END AS summary,
       evidence, 'watchdogs (subprocess_crashed; none within 60 s after a crash''s traceback)' AS rests_on
FROM g
ORDER BY ts NULLS LAST
