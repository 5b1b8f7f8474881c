-- question: Which child processes did a parent report dead (vLLM's "Worker … pid N died, exit code: C",
--   SGLang's and Dynamo's "Child process unexpectedly failed with exitcode=C. pid=N", SGLang's liveness
--   monitor "Subprocess … (pid=N) crashed with exit code C", multimodal_gen's "Rank N scheduler is dead."
--   with "Exit code: C" on the next line, DeepSpeed's launcher "[…] exits with return code = C"), with which
--   pids and exit codes?
-- tables: watchdogs, tracebacks, records (the report's text: the child's name, the next record's exit code)
-- columns:
--   ts        the first report of the group (UTC; NULL when the lines print no time)
--   end_ts    the last one (UTC)
--   kind      child_exits
--   role      role of the records (the parent's)
--   host      host
--   ranks     the ranks that logged them, e.g. [TP0]
--   n         reports (one per dead child)
--   summary   the finding in words: how many children, their pids and exit codes as printed (a negative
--             code is Python's multiprocessing word for a signal: -6 killed by signal 6 SIGABRT), when
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
-- a report that prints no exit code: SGLang's multimodal_gen launcher logs "Rank N scheduler is dead." and,
-- on its next line, "Exit code: C" (launch_server.py, batch16/07): the next record of the same input lends it
dead AS (
    SELECT e.event_id, e.source, e.message FROM watchdogs w JOIN records e USING (event_id)
    WHERE w.watchdog_kind = 'subprocess_crashed' AND w.exit_code IS NULL
),
nxt AS (
    SELECT event_id,
           TRY_CAST(regexp_extract(next_message, '^(?:\[[^\]\n]*\] )?Exit code: (-?\d+)', 1) AS INTEGER) AS exit_code,
           regexp_extract(message, 'Rank (\d+) scheduler is dead', 1) AS scheduler_rank
    FROM (SELECT e.event_id, e.message, lead(e.message) OVER (PARTITION BY e.source ORDER BY e.event_id) AS next_message
          FROM records e WHERE e.source IN (SELECT source FROM dead))
    WHERE event_id IN (SELECT event_id FROM dead)
),
w AS (
    SELECT w.* EXCLUDE (exit_code), coalesce(w.exit_code, n.exit_code) AS exit_code,
           concat_ws(' ', 'DP' || w.dp_rank, 'PP' || w.pp_rank, 'TP' || w.tp_rank, 'EP' || w.ep_rank) AS rank_label,
           -- the child's name where the report prints one (SGLang's "Subprocess scheduler_0 (pid=N)")
           coalesce(nullif(regexp_extract(e.message, 'Subprocess (\w+)', 1), '') || ', ', '')
           || coalesce('pid ' || w.target_pid, 'the rank ' || nullif(n.scheduler_rank, '') || ' scheduler, pid not printed',
                       'pid not printed')
           || coalesce(' (exit code ' || coalesce(w.exit_code, n.exit_code)
                       || CASE WHEN coalesce(w.exit_code, n.exit_code) < 0
                               THEN ': killed by signal ' || (-coalesce(w.exit_code, n.exit_code))
                                    || coalesce(' ' || CASE -coalesce(w.exit_code, n.exit_code)
                                        WHEN 2 THEN 'SIGINT' WHEN 3 THEN 'SIGQUIT' WHEN 4 THEN 'SIGILL' WHEN 6 THEN 'SIGABRT'
                                        WHEN 7 THEN 'SIGBUS' WHEN 8 THEN 'SIGFPE' WHEN 9 THEN 'SIGKILL' WHEN 11 THEN 'SIGSEGV'
                                        WHEN 15 THEN 'SIGTERM' END, '')
                               ELSE '' END || ')', '')
             AS child
    FROM watchdogs w LEFT JOIN nxt n USING (event_id) LEFT JOIN records e ON e.event_id = w.event_id
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
