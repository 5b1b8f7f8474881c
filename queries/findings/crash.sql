-- question: Which processes crashed with a traceback (a scheduler or worker exception, not a KV transfer
--   failure), which of them failed at start-up, and what came after (an exit, a restart, SIGQUIT)?
-- tables: tracebacks, transfer_errors, lifecycle, watchdogs, batches, config, processes, captures, stacks
-- columns:
--   ts        the first traceback of the group (UTC; NULL when the line printed no time)
--   end_ts    the last one (UTC)
--   kind      start_up_failure (init frames such as __init__/init_* without an event loop frame or a
--             scheduler per-batch frame (add_one_req, get_next_batch_to_run, run_batch, …), a
--             process whose server_args were logged and that advanced no batch before it, or an exception
--             that says initialization or start-up failed or was raised in a *startup* frame) or scheduler_crash
--   role      role of the records
--   host      host
--   ranks     the ranks that raised, e.g. [TP1] or [DP1 TP1 EP1]
--   n         traceback records in the group
--   summary   the finding in words: who raised, the exception type as printed (never guessed), where,
--             the step an unfinished progress bar printed just before it names, a cut traceback printed
--             at once after it, and what followed
--   evidence  events.event_id of the tracebacks, then of what followed
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per (kind, role, host, component, exception, innermost function). A traceback counts
--   when a process's loop died: its title names who raised ("Scheduler hit an exception", or Python
--   multiprocessing's "Process EngineCore_DP0:" above it: that child process, the component), or its frames
--   are a scheduler's loop (run_scheduler_process, event_loop_*, forward_thread_func) or init frames, or it
--   says start-up failed (its message or its record's first line: "initialization failed", "failed to
--   start"; a *startup* frame); a faulthandler dump at a fatal error ("Fatal Python error: Segmentation
--   fault", a watchdogs row fatal_python_error) whose current thread's frames were read (in its record or the
--   next one) counts as such a traceback (exception "Fatal Python error", the signal as its message; a dump
--   without the current thread stays unexplained), with the signal handlers' lines just before it (the
--   first record at most 20 before that says the same signal was received: Abseil's "*** SIGSEGV received
--   at time=…", glog's "*** SIGSEGV (@0x0) received by PID …", and every record after it): their evidence,
--   their first time its time; a
--   request's error traceback in the HTTP server is none. Start-up: init frames without an event loop or per-batch
--   frame, or an engine (role, host) whose server_args were logged and that printed neither a batch nor
--   "ready" between them and the traceback. A traceback that is also a transfer_errors row (the transfer
--   worker's assertion) is a transfer failure, not a crash. What
--   followed: the first lifecycle message of the role or host at or after it (exited, failed, stopping,
--   restart scheduled, server stopping) with the unit's next scheduled restart and its counter, else a
--   SIGQUIT or crashed-subprocess watchdog record within 60 s. Where the traceback or the message has no
--   time (a journal's short lines print no year), "after" is the order of the same input (event ids),
--   never "no exit in the data".
WITH dump AS (  -- a fatal error and the faulthandler dump of its current thread: in the same record, or in the next
               -- record of the same input (a blank line before "Stack (most recent call first):", batch13/04)
    SELECT w.*, c.capture_id, c.thread_id
    FROM watchdogs w
    JOIN captures c ON c.source = w.source AND c.thread_state = 'current'
    LEFT JOIN records ce ON ce.source = c.source AND ce.source_pos = c.source_pos AND ce.event_id = w.event_id + 1
    WHERE w.watchdog_kind = 'fatal_python_error' AND (c.source_pos = w.source_pos OR ce.event_id IS NOT NULL)
),
handler AS (  -- the signal handlers' lines before it: from the first record of the same input, at most 20 records
              -- before, that says the same signal was received (Abseil's "*** SIGSEGV received at time=…", also as
              -- Ray's logging.cc re-logs it; glog's "*** SIGSEGV (@0x0) received by PID …"), every record up to it
    SELECT d.event_id AS dump_id, min(e.event_id) AS first_id
    FROM dump d JOIN records e ON e.source = d.source AND e.event_id BETWEEN d.event_id - 20 AND d.event_id - 1
    WHERE regexp_extract(e.message, '\*\*\* SIG([A-Z]+) (?:\(@0x[0-9a-fA-F]+\) )?received\b', 1)
          = CASE d.reason WHEN 'Segmentation fault' THEN 'SEGV' WHEN 'Aborted' THEN 'ABRT' WHEN 'Bus error' THEN 'BUS'
                          WHEN 'Illegal instruction' THEN 'ILL' WHEN 'Floating-point exception' THEN 'FPE' END
    GROUP BY d.event_id
),
handled AS (  -- those lines: their ids, their first time (the dump prints none)
    SELECT h.dump_id, list(e.event_id ORDER BY e.event_id) AS ids, min(e.ts) AS ts
    FROM handler h JOIN records e ON e.source = (SELECT d.source FROM dump d WHERE d.event_id = h.dump_id LIMIT 1)
                                 AND e.event_id BETWEEN h.first_id AND h.dump_id - 1
    GROUP BY h.dump_id
),
fault AS (  -- a faulthandler dump at a fatal error, its current thread's frames as a traceback's
    SELECT d.event_id, coalesce(d.ts, any_value(h.ts)) AS ts, d.host, d.role, d.pid, d.dp_rank, d.pp_rank, d.tp_rank, d.ep_rank, d.level,
           d.source, d.source_pos, NULL::VARCHAR AS component,
           'Fatal Python error' AS exception, d.reason AS exc_message, TRUE AS from_fault,
           any_value(h.ids) AS handler_ids,
           arg_min(s.function, s.depth) AS function, arg_min(s.file, s.depth) AS file, arg_min(s.line, s.depth) AS line,
           count(*)::INTEGER AS n_frames,
           string_agg('  File "' || coalesce(s.file, '?') || '", line ' || coalesce(s.line::VARCHAR, '?')
                      || ', in ' || s.function, chr(10) ORDER BY s.depth DESC) AS traceback
    FROM dump d
    JOIN stacks s ON s.capture_id = d.capture_id AND s.thread_id IS NOT DISTINCT FROM d.thread_id
    LEFT JOIN handled h ON h.dump_id = d.event_id
    WHERE s.function IS NOT NULL
    GROUP BY d.event_id, d.ts, d.host, d.role, d.pid, d.dp_rank, d.pp_rank, d.tp_rank, d.ep_rank, d.level, d.source, d.source_pos, d.reason
),
traced AS (  -- the tracebacks, and the faulthandler dumps at a fatal error whose crashing thread was read
    SELECT * FROM tracebacks
    UNION ALL BY NAME
    SELECT * FROM fault
),
launcher_runs AS (
    -- a traceback cut after runpy's own frames (`python -m` running a module: `_run_module_as_main`,
    -- `_run_code`) in an input whose records before it name one module run with -m, SGLang's server
    -- launcher (a test script's `command=python3.10 -m sglang.launch_server …`, sglang#7033, batch23/13):
    -- that command's process failed as it began; a `python -m` of anything else (a client, a benchmark)
    -- or no command printed leaves it unexplained
    SELECT t.event_id FROM traced t
    WHERE t.exception IS NULL AND regexp_matches(coalesce(t.traceback, ''), 'runpy\.py", line \d+, in _run_module_as_main')
      AND len(regexp_extract_all(coalesce(t.traceback, ''), 'File "[^"\n]*"'))
                 = len(regexp_extract_all(coalesce(t.traceback, ''), 'File "[^"\n]*/runpy\.py"'))
      AND coalesce((SELECT list_distinct(flatten(list(regexp_extract_all(p.message, '(?:^|\s)-m\s+([A-Za-z_][\w.]*)', 1))))
                           FROM records p WHERE p.source = t.source AND p.event_id < t.event_id), [])
                 = ['sglang.launch_server']
),
tb AS (
    -- Python multiprocessing's "Process <name>:" above a traceback: that child process died of it (its name
    -- the component when no title named one: vLLM's "Process EngineCore_DP0:", batch13/13)
    SELECT t.* REPLACE (coalesce(t.component, nullif(regexp_extract(split_part(coalesce(e.message, ''), chr(10), 1),
                                                     '(?:^|\) )Process ([A-Za-z_][\w.-]*):\s*$', 1), ''),
                                 -- vLLM's EngineDeadError names the process that died in its message ("EngineCore
                                 -- encountered an issue"): the engine core, as its client reports it (batch13/11)
                                 CASE WHEN regexp_matches(coalesce(t.exception, ''), '(^|\.)EngineDeadError$')
                                      THEN nullif(regexp_extract(coalesce(t.exc_message, ''), '^([A-Za-z_]\w*) encountered an issue', 1), '') END
                                ) AS component),
           regexp_matches(coalesce(t.exception, ''), '(^|\.)EngineDeadError$') AS reported_dead,
           -- a cut traceback (no exception line) whose innermost frame's code line calls a constructor: it
           -- failed while that object was being built, in its init frames the cut left out (vLLM's
           -- `engine_core = EngineCoreProc(*args, **kwargs)` in run_engine_core, batch13/13)
           CASE WHEN t.exception IS NULL THEN
             nullif(regexp_extract(regexp_extract(coalesce(t.traceback, ''), '(?s).*File "[^"\n]*", line \d+, in [^\n]*\n[ \t]*([^\n]*)', 1),
                                   '^(?:[\w.]+\s*=\s*)?(?:[\w.]*\.)?([A-Z]\w*)\(', 1), '')
           END AS constructing,
           concat_ws(' ', 'DP' || t.dp_rank, 'PP' || t.pp_rank, 'TP' || t.tp_rank, 'EP' || t.ep_rank) AS rank_label,
           -- init frames: no frame of the serving path under or above them, an event loop or the
           -- scheduler's per-batch calls (a cut fragment shows no loop: `add_one_req` → `init_load_back`,
           -- the radix cache loading a prefix back for a request, is no start-up; batch20/13)
           -- (the model loader's entry, get_model, runs once, from the model runner's init: a fragment cut above
           -- it still fails at start-up, batch23/01's KeyError in load_weights ← load_model ← get_model)
           regexp_matches(coalesce(t.traceback, ''), ', in (__init__|init_\w+|_init_\w+|get_model)\b')
             AND NOT regexp_matches(coalesce(t.traceback, ''),
                                    ', in (event_loop_\w+|add_one_req|get_next_batch_to_run|get_new_batch_prefill|run_batch|process_batch_result\w*)\b') AS init_frames,
           -- the exception says start-up failed, or it was raised while waiting for start-up (vLLM's
           -- "Engine core initialization failed" from wait_for_engine_startup)
           regexp_matches(coalesce(t.exc_message, ''), '(?i)\b(initiali[sz]ation|start-?up)\b[^\n]*\bfailed\b|\bfailed to (start|initiali[sz]e)\b')
             OR regexp_matches(coalesce(t.traceback, ''), ', in \w*startup\w*\b')
             -- or the record's own first line says so (vLLM's "EngineCore failed to start." above a cut traceback)
             OR regexp_matches(split_part(coalesce(e.message, ''), chr(10), 1), '(?i)\b(initiali[sz]ation|start-?up)\b[^\n]*\bfailed\b|\bfailed to (start|initiali[sz]e)\b') AS startup_said,
           EXISTS (SELECT 1 FROM config c
                   WHERE c.host IS NOT DISTINCT FROM t.host AND c.role = t.role AND c.first_ts <= t.ts
                     AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.host IS NOT DISTINCT FROM t.host
                                     AND b.role = t.role AND b.ts BETWEEN c.first_ts AND t.ts)
                     AND NOT EXISTS (SELECT 1 FROM processes p WHERE p.host IS NOT DISTINCT FROM t.host
                                     AND p.role = t.role AND p.ready_ts BETWEEN c.first_ts AND t.ts)
           ) AS before_serving,
           -- what the record's text prints, to tell "not printed" from "printed but not read"; of a chained
           -- traceback, its final part (after the last "During handling of the above exception …" line) alone
           regexp_matches(regexp_replace(coalesce(e.message, t.traceback, ''), '(?s)^.*\n(\([^)\n]*\) )*(During handling of the above exception, another exception occurred|The above exception was the direct cause of the following exception):[ \t]*\n', ''),
                          '(?m)^\s*([A-Za-z_]\w*\.)*[A-Z]\w*(Error|Exception|Exit|Interrupt)\b(: |:?$)') AS exc_in_text,
           -- a chained traceback whose final part is cut: the exception it was raised while handling (the last
           -- exception line before the last lead line: sglang#7918, batch23/06)
           CASE WHEN t.exception IS NULL THEN
             nullif(list_last(regexp_extract_all(
                 regexp_extract(coalesce(t.traceback, ''), '(?s)^(.*)\n(\([^)\n]*\) )*(During handling of the above exception, another exception occurred|The above exception was the direct cause of the following exception):[ \t]*\n', 1),
                 '(?m)^(?:\([^)\n]*\) )*((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:: [^\n]*)?)$', 1)), '')
           END AS chained_from,
           regexp_matches(coalesce(e.message, ''), '\b(TP|DP|PP|EP)\d+\b|\[rank\d+\]') AS rank_in_text,
           regexp_matches(coalesce(t.traceback, ''), 'launch_server\.py", line \d+, in <module>') AS launching,
           t.event_id IN (SELECT event_id FROM launcher_runs) AS run_as_launcher
    FROM traced t LEFT JOIN records e ON e.event_id = t.event_id
    WHERE t.event_id NOT IN (SELECT event_id FROM transfer_errors)
      AND (t.component IS NOT NULL  -- "Scheduler hit an exception", "TpModelWorkerClient hit an exception"
           OR t.from_fault  -- the process died of a fatal signal in that thread
           OR regexp_matches(split_part(coalesce(e.message, ''), chr(10), 1), '(?:^|\) )Process [A-Za-z_][\w.-]*:\s*$')
           OR regexp_matches(coalesce(t.traceback, ''), ', in (run_scheduler_process|event_loop_\w+|forward_thread_func\w*)\b')
           OR regexp_matches(coalesce(t.traceback, ''), ', in (__init__|init_\w+|_init_\w+|get_model)\b')
           -- the server's launcher failing as Python imports it (`launch_server.py", line 6, in <module>`: an
           -- import error of sglang.srt.server, sglang#1321, batch23/14)
           OR regexp_matches(coalesce(t.traceback, ''), 'launch_server\.py", line \d+, in <module>')
           OR t.event_id IN (SELECT event_id FROM launcher_runs)
           OR regexp_matches(coalesce(t.exception, ''), '(^|\.)EngineDeadError$')  -- the process named died
           OR regexp_matches(coalesce(t.exc_message, ''), '(?i)\b(initiali[sz]ation|start-?up)\b[^\n]*\bfailed\b|\bfailed to (start|initiali[sz]e)\b')
           OR regexp_matches(coalesce(t.traceback, ''), ', in \w*startup\w*\b')
           OR regexp_matches(split_part(coalesce(e.message, ''), chr(10), 1), '(?i)\b(initiali[sz]ation|start-?up)\b[^\n]*\bfailed\b|\bfailed to (start|initiali[sz]e)\b'))
),
grouped AS (
    SELECT row_number() OVER () AS gid, *
    FROM (
    SELECT CASE WHEN init_frames OR constructing IS NOT NULL OR before_serving OR startup_said OR launching OR run_as_launcher THEN 'start_up_failure' ELSE 'scheduler_crash' END AS kind,
           role, host, component, exception, function,
           any_value(file ORDER BY ts) AS file, any_value(line ORDER BY ts) AS line,
           any_value(exc_message ORDER BY ts) AS exc_message, bool_or(init_frames) AS init_frames,
           bool_or(exc_in_text) AS exc_in_text, bool_or(rank_in_text) AS rank_in_text,
           any_value(chained_from ORDER BY ts) AS chained_from, bool_or(launching) AS launching,
           bool_or(run_as_launcher) AS run_as_launcher,
           coalesce(bool_or(from_fault), FALSE) AS from_fault,
           any_value(constructing) AS constructing, bool_or(reported_dead) AS reported_dead,
           coalesce(list_sort(list_distinct(list(pid) FILTER (WHERE pid IS NOT NULL))), []) AS pids,
           min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(event_id ORDER BY ts, event_id) AS ids, max(event_id) AS last_id,
           flatten(list(handler_ids) FILTER (WHERE handler_ids IS NOT NULL)) AS handler_ids,
           list_distinct(list(source)) AS sources
    FROM tb GROUP BY ALL
    )
),
-- native stack frames printed at once after one of its tracebacks (the next record of the same input, at
-- the same time and pid as read, no message of its own: c10's `frame #N: f + 0x… (0x… in lib)`, Open MPI's
-- `[host:pid] [ N] lib(f+0x…)[0x…]`) are the same process's dying words: its evidence, not a crash apart
-- (batch4/05: frames #1-#7 of libc10_cuda.so … after the prefill scheduler's cut traceback, the same second)
frames_after AS (
    SELECT g.gid, list(e.event_id ORDER BY e.event_id) AS ids,
           sum(len(regexp_extract_all(e.message, '(?m)((^|\) )frame #\d+: |^\[[\w.-]+:\d+\] \[ *\d+\] )')))::BIGINT AS frames,
           arg_min(nullif(regexp_extract(e.message, '(?m)frame #\d+: ([A-Za-z_][^\n(]*?)(?:\(|\s\+ 0x)', 1), ''), e.event_id) AS named
    FROM grouped g
    JOIN records t ON list_contains(g.ids, t.event_id)
    JOIN records e ON e.source = t.source AND e.event_id = t.event_id + 1
    WHERE e.kind = 'other' AND e.ts IS NOT DISTINCT FROM t.ts AND e.pid IS NOT DISTINCT FROM t.pid
      AND (regexp_matches(e.message, '(?m)(^|\) )frame #\d+: \S[^\n]* \+ 0x[0-9a-f]+ \(0x[0-9a-f]+ in \S')
           OR regexp_matches(e.message, '(?m)^\[[\w.-]+:\d+\] \[ *\d+\] \S+\([^)\n]*\)\[0x[0-9a-f]+\]'))
    GROUP BY g.gid
),
-- a traceback cut before its exception line, printed right after one of the group's (the next record of the
-- same input, at the same printed instant, of the same pid as read): the same failure as another caller saw it
-- (batch13/11: vLLM's "Error in chat completion stream generator." traceback, cut, at 08-24 06:28:15 right
-- after the EngineDeadError its output processor raised); its evidence, not an unexplained crash apart. A client
-- that reported its engine dead (EngineDeadError) with no time printed: its next record, a cut traceback of the
-- same pid, is the request it was serving failing of that death, at its own time (Ray Serve's replica: the
-- EngineDeadError's tail, then "ERROR 2025-05-23 00:42:04,876 … -- Encountered failure while handling request …"
-- with its frames, ray#53267, batch21/02); said with the message its logger printed (tracebacks.lead)
tb_after AS (
    SELECT g.gid, list(e.event_id ORDER BY e.event_id) AS ids,
           arg_min(n.function || coalesce(' (' || regexp_extract(n.file, '[^/]+$') || ':' || n.line || ')', ''), e.event_id) AS innermost,
           bool_and(coalesce(e.ts::VARCHAR, e.printed_time) IS NOT DISTINCT FROM coalesce(t.ts::VARCHAR, t.printed_time)) AS same_instant,
           min(e.ts) AS ts, arg_min(n.lead, e.event_id) AS lead
    FROM grouped g
    JOIN records t ON list_contains(g.ids, t.event_id)
    JOIN records e ON e.source = t.source AND e.event_id = t.event_id + 1
    JOIN tracebacks n ON n.event_id = e.event_id
    WHERE n.exception IS NULL AND e.pid IS NOT DISTINCT FROM t.pid
      AND (coalesce(e.ts::VARCHAR, e.printed_time) = coalesce(t.ts::VARCHAR, t.printed_time)
           OR (g.reported_dead AND t.pid IS NOT NULL AND t.ts IS NULL AND t.printed_time IS NULL))
      AND NOT EXISTS (SELECT 1 FROM grouped o WHERE list_contains(o.ids, e.event_id))
    GROUP BY g.gid
),
-- a later traceback, cut before its exception, whose record's first line quotes the group's exception message (at
-- least 20 characters of it): the same failure as the caller that logged it saw it, never a failure of that
-- caller (Xinference's worker logging "Leave launch_builtin_model, error: [address=0.0.0.0:43399, pid=1793]
-- Initialization failed. …" above its own cut traceback, after SGLang's RuntimeError with that message:
-- xinference#3745, batch25/04); the group's evidence, said with its time and first line
caller AS (
    SELECT g.gid, r.gid AS rgid, r.ids, r.ts, arg_min(split_part(e.message, chr(10), 1), e.event_id) AS said
    FROM grouped g
    JOIN grouped r ON r.gid <> g.gid AND r.exception IS NULL AND list_min(r.ids) > g.last_id
                  AND len(list_intersect(r.sources, g.sources)) > 0
    JOIN records e ON e.event_id = list_min(r.ids)
    WHERE g.exception IS NOT NULL AND length(g.exc_message) >= 20
      AND contains(split_part(e.message, chr(10), 1), g.exc_message)
    GROUP BY g.gid, r.gid, r.ids, r.ts
),
-- an unfinished progress bar printed just before the group's first traceback (the record before it in the same
-- input: tqdm's "desc:   2%|▏ | 2/83 [00:01<00:56, …]", k below its total): the step it failed in (batch13/13:
-- vLLM's "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)" at 2/83; batch18/02: SGLang's "Capturing
-- batches (bs=64 avail_mem=13.97 GB)" at 0/11; batch15/01: "DeepGEMM warmup" at 11/512)
bar_before AS (
    SELECT g.gid, arg_max(e.event_id, e.event_id) AS bar_id,
           arg_max(nullif(trim(regexp_extract(e.message, '^(.*?):?\s*\d{1,3}%\|', 1)), ''), e.event_id) AS step,
           arg_max(regexp_extract(e.message, '\| *(\d+/\d+) \[', 1), e.event_id) AS done
    FROM grouped g
    JOIN records t ON t.event_id = list_min(g.ids)
    JOIN records e ON e.source = t.source AND e.event_id = t.event_id - 1
    WHERE e.kind = 'other' AND e.ts IS NULL
      AND regexp_matches(e.message, '^[^\n]*?\d{1,3}%\|[^\n]*?\| *\d+/\d+ \[\d+:\d{2}(?::\d{2})?<[^\n]*$')
      AND TRY_CAST(regexp_extract(e.message, '\| *(\d+)/\d+ \[', 1) AS BIGINT)
          < TRY_CAST(regexp_extract(e.message, '\| *\d+/(\d+) \[', 1) AS BIGINT)
    GROUP BY g.gid
),
-- what came after: at or after the group's first time; where either has no time (a journal's short lines
-- without a year), after its last traceback in the same input (event ids follow the input's order)
follows AS (
    SELECT g.gid, l.*, row_number() OVER (PARTITION BY g.gid ORDER BY l.ts, l.event_id) AS k
    FROM grouped g JOIN lifecycle l
      ON (l.host IS NOT DISTINCT FROM g.host OR l.role = g.role)
     AND l.event IN ('exited', 'failed', 'stopping', 'stopped', 'restart_scheduled', 'server_stopping')
     AND (l.ts >= g.ts
          OR ((l.ts IS NULL OR g.ts IS NULL) AND list_contains(g.sources, l.source) AND l.event_id > g.last_id))
),
-- the same unit's next scheduled restart after that message (systemd's Restart=), with its counter
restarted AS (
    SELECT f.gid, arg_min(r.restart_counter, r.k) AS restart_counter, arg_min(r.event_id, r.k) AS event_id
    FROM follows f JOIN follows r
      ON r.gid = f.gid AND r.k > f.k AND r.event = 'restart_scheduled' AND r.unit IS NOT DISTINCT FROM f.unit
    WHERE f.k = 1 AND f.event <> 'restart_scheduled'
    GROUP BY f.gid
),
after AS (
    SELECT g.gid,
           f.event || coalesce(' (' || nullif(concat_ws(', ', f.unit, f.status), '') || ')', '')
                   -- a time printed without a year (journalctl -o short) quoted as printed, never called absent
                   || coalesce(' at ' || strftime(f.ts, '%H:%M:%S UTC'),
                               ' (after it in the input) at ' || (SELECT e.printed_time FROM records e WHERE e.event_id = f.event_id) || ' as printed',
                               ' (after it in the input; no time printed)')
                   || coalesce(', restart counter ' || f.restart_counter, '')
                   || coalesce('; then a restart scheduled, restart counter ' || r.restart_counter, '') AS lifecycle_after,
           f.event_id AS lifecycle_id, r.event_id AS restart_id,
           (SELECT CASE w.watchdog_kind WHEN 'sigquit' THEN 'SIGQUIT received (a child process failed)'
                        ELSE 'a subprocess crashed' || coalesce(' (exit code ' || w.exit_code || ')', '') END || ' at ' || strftime(w.ts, '%H:%M:%S UTC') FROM watchdogs w
            WHERE w.watchdog_kind IN ('sigquit', 'subprocess_crashed') AND w.ts BETWEEN g.ts AND g.end_ts + INTERVAL 60 SECOND
            ORDER BY w.ts LIMIT 1) AS signal_after,
           (SELECT w.event_id FROM watchdogs w
            WHERE w.watchdog_kind IN ('sigquit', 'subprocess_crashed') AND w.ts BETWEEN g.ts AND g.end_ts + INTERVAL 60 SECOND
            ORDER BY w.ts LIMIT 1) AS signal_id
    FROM grouped g
    LEFT JOIN follows f ON f.gid = g.gid AND f.k = 1
    LEFT JOIN restarted r ON r.gid = g.gid
)
SELECT g.ts, g.end_ts, g.kind, g.role, g.host, g.ranks, g.n,
       coalesce(g.component, 'A process') || CASE WHEN g.role <> 'unknown' THEN ' (' || g.role || ')' ELSE '' END
       -- a process known by its pid alone (no rank printed) is named by it: the traceback's, or its signal
       -- handlers' lines' (Ray's logging.cc `E 19394 19394`, batch13/04); an EngineDeadError's pid is the
       -- client's that reported the death, never the dead process's
       || CASE WHEN coalesce(len(g.ranks), 0) = 0 AND NOT g.reported_dead AND len(p.pids) > 0
               THEN ' (pid ' || array_to_string(p.pids[1:3], ', ') || CASE WHEN len(p.pids) > 3 THEN ', …' ELSE '' END || ')'
               ELSE '' END
       || CASE WHEN g.reported_dead THEN ' died, as its client' || coalesce(' (pid ' || nullif(array_to_string(g.pids, ', '), '') || ')', '') || ' reported it'
               WHEN g.kind = 'start_up_failure' THEN ' failed at start-up' ELSE ' crashed' END
       || CASE WHEN len(g.ranks) > 0 THEN ' on ' || array_to_string(g.ranks, ', ') WHEN g.rank_in_text THEN ' (a rank printed but not read)' ELSE ' (rank not printed)' END
       || coalesce(' at ' || strftime(g.ts, '%Y-%m-%d %H:%M:%S UTC'), ' (no time read)')
       || ': ' || coalesce(g.exception || coalesce(': ' || CASE WHEN length(g.exc_message) > 120 THEN left(g.exc_message, 119) || '…' ELSE g.exc_message END, ''),
                           CASE WHEN g.exc_in_text THEN 'exception line printed but not read'
                                ELSE 'exception type not printed (the traceback is cut)' END)
       || coalesce(' in ' || g.function || coalesce(' (' || regexp_extract(g.file, '[^/]+$') || ':' || g.line || ')', ''), '')
       || coalesce(', raised while handling ' || CASE WHEN length(g.chained_from) > 120 THEN left(g.chained_from, 119) || '…' ELSE g.chained_from END, '')
       || CASE WHEN g.n > 1 THEN ' (' || g.n || ' tracebacks)' ELSE '' END
       || CASE WHEN g.launching AND NOT g.init_frames THEN '; raised while Python imported the server''s launcher (launch_server.py), before serving'
               WHEN g.run_as_launcher THEN '; raised as `python -m sglang.launch_server` (the command printed before it) began to run, before serving'
               WHEN g.init_frames THEN '; raised in init frames, before serving'
               WHEN g.constructing IS NOT NULL THEN '; raised while constructing ' || g.constructing || ' (its frames cut), before serving'
               ELSE '' END
       || coalesce('; during "' || bb.step || '" (its progress bar at ' || bb.done || ', printed just before)', '')
       || coalesce('; followed at once by ' || tr.frames || ' native stack frame line(s) of the same input and time'
                   || coalesce(' (' || tr.named || ' …)', ''), '')
       || CASE WHEN ta.same_instant
               THEN '; followed at once by ' || len(ta.ids) || ' more traceback(s) of the same input and instant, cut before the exception line'
                    || coalesce(' (innermost frame as printed: ' || ta.innermost || ')', '')
               WHEN ta.gid IS NOT NULL
               THEN '; then the same process''s next record' || coalesce(' at ' || strftime(ta.ts, '%Y-%m-%d %H:%M:%S UTC'), '')
                    || coalesce(': "' || CASE WHEN length(ta.lead) > 160 THEN left(ta.lead, 159) || '…' ELSE ta.lead END || '"', '')
                    || ' (a traceback cut before its exception line' || coalesce('; innermost frame: ' || ta.innermost, '') || ')'
               ELSE '' END
       || coalesce('; reported by its caller' || coalesce(' at ' || strftime(cl.ts, '%Y-%m-%d %H:%M:%S UTC'), '')
                   || ': "' || CASE WHEN length(cl.said) > 160 THEN left(cl.said, 159) || '…' ELSE cl.said END
                   || '" (its own traceback cut before the exception line)', '')
       || '; then ' || coalesce(a.lifecycle_after, a.signal_after, 'no exit or restart read after it') AS summary,
       list_filter(g.ids || coalesce(g.handler_ids, []) || coalesce(tr.ids, []) || coalesce(ta.ids, []) || coalesce(cl.ids, [])
                   || [bb.bar_id, a.lifecycle_id, a.restart_id, a.signal_id], lambda x: x IS NOT NULL) AS evidence,
       CASE WHEN g.from_fault THEN 'watchdogs (fatal_python_error: the faulthandler dump''s current thread; the signal handlers'' lines before it)'
            ELSE 'tracebacks (not transfer_errors)' END
       || ', lifecycle and watchdogs after it; init frames or server_args without a batch before it' AS rests_on
FROM grouped g JOIN after a ON a.gid = g.gid
LEFT JOIN frames_after tr ON tr.gid = g.gid
LEFT JOIN tb_after ta ON ta.gid = g.gid
LEFT JOIN (SELECT gid, arg_min(rgid, rgid) AS rgid, flatten(list(ids)) AS ids, min(ts) AS ts, arg_min(said, rgid) AS said
           FROM caller GROUP BY gid) cl ON cl.gid = g.gid
LEFT JOIN bar_before bb ON bb.gid = g.gid
-- the pids of the group's tracebacks and of its signal handlers' lines
LEFT JOIN (SELECT g2.gid, list_sort(list_distinct(flatten([coalesce(g2.pids, []),
                                                             coalesce(list(e.pid) FILTER (WHERE e.pid IS NOT NULL), [])]))) AS pids
           FROM grouped g2 LEFT JOIN records e ON list_contains(coalesce(g2.handler_ids, []), e.event_id)
           GROUP BY g2.gid, g2.pids) p ON p.gid = g.gid
WHERE g.gid NOT IN (SELECT rgid FROM caller)
ORDER BY g.ts NULLS LAST, g.ids[1]
