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
--             code is Python's multiprocessing word for a signal: -6 killed by signal 6 SIGABRT), when;
--             the dead child's banner of that signal printed just before a report, with its frames
--   evidence  events.event_id of every report, then of the banners
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
           OR regexp_matches(coalesce(traceback, ''), ', in (__init__|init_\w+|_init_\w+|get_model)\b')
           OR regexp_matches(coalesce(traceback, ''), 'launch_server\.py", line \d+, in <module>'))
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
-- the dead child's own last words: the record right before the report in the same input, no time of its own,
-- that says the signal the exit code names (SGLang's "!!!!!!! Segfault encountered !!!!!!!" banner with its
-- `File "<unknown>", line 0, in ibv_destroy_qp` frames, then "Subprocess scheduler_0 (pid=922727) crashed with
-- exit code -11.": batch16/08); its frames, most recent first, address-only ones skipped
banner AS (
    SELECT w.event_id, b.event_id AS banner_id,
           regexp_extract(b.message, '(?m)^\s*(\S.*)$', 1) AS banner,
           list_filter(regexp_extract_all(b.message, '(?m)^[ \t]*File "[^"\n]*", line \d+,? in ([^\n]{1,120})$', 1),
                       lambda f: NOT regexp_matches(f, '^0x[0-9a-fA-F]+\s*$')) AS frames
    FROM watchdogs w
    JOIN records e ON e.event_id = w.event_id
    JOIN records b ON b.source = e.source AND b.event_id = e.event_id - 1
    WHERE w.watchdog_kind = 'subprocess_crashed' AND b.ts IS NULL
      AND regexp_matches(b.message, CASE w.exit_code
            WHEN -11 THEN '(?i)Segmentation fault|\bSegfault\b|\bSIGSEGV\b'
            WHEN -6 THEN '(?i)\bAborted\b|\bSIGABRT\b|terminate called'
            WHEN -7 THEN '(?i)Bus error|\bSIGBUS\b'
            WHEN -4 THEN '(?i)Illegal instruction|\bSIGILL\b'
            WHEN -8 THEN '(?i)Floating[- ]point exception|\bSIGFPE\b' END)
),
w AS (
    SELECT w.* EXCLUDE (exit_code), coalesce(w.exit_code, n.exit_code) AS exit_code, bn.banner_id,
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
           || coalesce('; printed just before it: "' || left(bn.banner, 80) || '"'
                       || CASE WHEN len(bn.frames) > 0 THEN
                            ' (its first frame: ' || trim(bn.frames[1])
                            || CASE WHEN len(bn.frames) > 1
                                    THEN '; its callers, as printed: ' || array_to_string(list_transform(bn.frames[2:4],
                                             lambda f: CASE WHEN length(trim(f)) > 60 THEN regexp_replace(trim(f), '\(.*$', '(…)') ELSE trim(f) END), ' ← ')
                                         || CASE WHEN len(bn.frames) > 4 THEN ' ← … (' || (len(bn.frames) - 4) || ' more)' ELSE '' END
                                    ELSE '' END || ')'
                          ELSE '' END, '')
             AS child
    FROM watchdogs w LEFT JOIN nxt n USING (event_id) LEFT JOIN records e ON e.event_id = w.event_id
    LEFT JOIN banner bn ON bn.event_id = w.event_id
    WHERE w.watchdog_kind = 'subprocess_crashed'
      AND NOT EXISTS (SELECT 1 FROM crash_tb t WHERE w.ts BETWEEN t.ts AND t.ts + INTERVAL 60 SECOND)
),
g AS (
    SELECT role, host, min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(child ORDER BY ts NULLS LAST, event_id) AS children,
           list_concat(list(event_id ORDER BY ts NULLS LAST, event_id),
                       list(banner_id ORDER BY ts NULLS LAST, event_id) FILTER (WHERE banner_id IS NOT NULL)) AS evidence
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
