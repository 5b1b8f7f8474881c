-- question: Where does every dumped process wait: per py-spy dump, its main thread's innermost frame
--   (per faulthandler dump in a fatal error's record: where its current thread crashed),
--   and the collective, point-to-point op or device sync it waits in when a frame names one, whether
--   the frames are init frames (start-up) or a serving loop, and who took the dump?
-- tables: captures, stacks, events
-- columns:
--   ts        the first dump (UTC; NULL when no dump has a time: a bare py-spy file)
--   end_ts    the last dump (UTC)
--   kind      stacks_captured
--   role      the role of the dumped processes when all of them print the same known one, else NULL
--   host      their host when there is one, else NULL
--   ranks     the ranks dumped, e.g. [TP0, TP1] or [DP1 TP3]; empty when no dump prints a rank
--   n         py-spy dumps (captures with a thread told); a process dumped in two rounds counts twice
--   summary   the groups of identical waits in words, e.g. "4 scheduler ranks TP0-TP3 wait in a device
--             synchronize: synchronize (torch/cuda/streams.py:102) under __init__ (pynccl.py:121), in
--             init frames …: a start-up hang", then who took the dumps and the pids py-spy failed on
--   evidence  events.event_id of SGLang's "Pyspy dump for PID N" records and "Pyspy failed" records
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: rule stacks_captured, one row for all dumps. The threads told: each dump's main thread,
--   any other thread whose stack is inside a collective, a send/recv or a device sync (captures'
--   wait_class, from parsers/pyspy_rules.py), and an active thread of a dump whose main thread is idle
--   (the process is not idle). A thread waits "in" an op only when a frame names one
--   (its wait_frame); else it is idle or active in its innermost Python frame (with py-spy --native:
--   in the innermost named native frame, inside that Python frame), and no collective is claimed. "under" is the first
--   Python frame above it outside torch/ and outside the frame's own top-level package. Serving loop:
--   an event_loop_* frame; init frames: __init__/init_*/_init_* without one (as the start_up_failure
--   rule of crash.sql); a wait in init frames is a start-up hang. Threads with the same wait, frame,
--   caller, phase and role form one group; ranks in a row become ranges (TP0-TP3). A dump whose record
--   header "Pyspy dump for PID N" is in the text was logged by SGLang (its watchdog or crash
--   diagnostics); one without it is bare py-spy output. A faulthandler dump inside a "Fatal Python
--   error" record (a watchdogs row fatal_python_error at the same line) is no py-spy dump and no wait:
--   it is worded as a faulthandler dump at the crash, and its "Current thread" (thread_state current)
--   is told as the thread that crashed in its frame. It leads the summary only when nothing worse
--   (a crash, timeout, stop, failed transfer) is found. When no py-spy dump is of a scheduler rank (no rank,
--   no sglang::scheduler title; outside SGLang "no dumped process names a rank") and no thread waits in an
--   op, it says the dumps show no hung rank, whether any watchdog record was read, and how long before the
--   first dump the same log's last batch line was.
WITH told AS (
    SELECT c.*,
           c.wait_class IN ('all_reduce', 'broadcast', 'all_gather', 'reduce_scatter', 'all_to_all', 'barrier',
                            'send', 'recv', 'cuda_sync') AS in_op,
           coalesce(c.tp_rank, c.dp_rank, c.pp_rank, c.ep_rank) IS NOT NULL AS is_rank,
           e.event_id AS dump_event, w.reason AS crash
    FROM captures c
    LEFT JOIN records e
      ON e.kind = 'pyspy' AND e.source = c.source AND e.source_pos = c.source_pos
         AND e.message LIKE '%Pyspy dump for PID%'
    -- a faulthandler dump printed by a fatal error: the record that carries it is the crash
    LEFT JOIN watchdogs w
      ON w.watchdog_kind = 'fatal_python_error' AND w.source = c.source AND w.source_pos = c.source_pos
    WHERE c.n_frames > 0
      -- faulthandler's current thread is told with its fatal line, or when its input holds no fatal line at all
      -- (sglang#6083, batch24/02: the dump's "Current thread" in weight_loader, its "Fatal Python error" line
      -- above the paste); a fatal line read apart from the dump (batch13/04: abseil's lines between) is the
      -- crash finding's, and the dump is not said to lack it
      AND (c.is_main
           OR c.thread_state = 'current'
              AND (w.reason IS NOT NULL
                   OR NOT EXISTS (SELECT 1 FROM watchdogs x WHERE x.watchdog_kind = 'fatal_python_error' AND x.source = c.source))
           OR c.wait_class IN ('all_reduce', 'broadcast', 'all_gather', 'reduce_scatter', 'all_to_all',
                                         'barrier', 'send', 'recv', 'cuda_sync')
           -- a process is told by all its threads: an active one beside an idle main thread too
           OR (c.thread_state = 'active'
               AND EXISTS (SELECT 1 FROM captures m WHERE m.capture_id = c.capture_id AND m.is_main
                                                        AND m.thread_state = 'idle')))
),
frames AS (
    SELECT s.capture_id, s.thread_id, s.depth, s.function, s.is_native,
           CASE WHEN s.file LIKE '%/%' THEN split_part(s.file, '/', 1) END AS pkg, s.file,
           s.function || ' (' || coalesce(s.file, '?') || coalesce(':' || s.line, '') || ')' AS frame
    FROM stacks s SEMI JOIN told t ON t.capture_id = s.capture_id AND t.thread_id IS NOT DISTINCT FROM s.thread_id
    WHERE s.function IS NOT NULL
),
per_thread AS (
    -- the frame named: the op's wait_frame, else the innermost Python frame (else the innermost)
    SELECT t.capture_id, t.thread_id,
           coalesce(min(f.depth) FILTER (WHERE t.in_op AND f.frame = t.wait_frame),
                    min(f.depth) FILTER (WHERE NOT f.is_native), min(f.depth)) AS at_depth,
           min(f.depth) AS inner_depth,
           min(f.depth) FILTER (WHERE f.is_native AND f.function NOT LIKE '0x%') AS native_depth,
           arg_min(f.frame, (f.function = '__init__', f.depth))
               FILTER (WHERE regexp_matches(f.function, '^(__init__|_?init_\w+)$')) AS init_frame
    FROM told t JOIN frames f ON f.capture_id = t.capture_id AND f.thread_id IS NOT DISTINCT FROM t.thread_id
    GROUP BY ALL
),
named AS (
    SELECT p.*, a.frame AS at_frame, a.is_native AS at_native, a.pkg AS at_pkg,
           CASE WHEN NOT a.is_native AND p.native_depth < p.at_depth THEN n.frame END AS native_frame
    FROM per_thread p
    JOIN frames a ON a.capture_id = p.capture_id AND a.thread_id IS NOT DISTINCT FROM p.thread_id AND a.depth = p.at_depth
    LEFT JOIN frames n ON n.capture_id = p.capture_id AND n.thread_id IS NOT DISTINCT FROM p.thread_id
                          AND n.depth = p.native_depth
),
callers AS (
    SELECT n.capture_id, n.thread_id, arg_min(f.frame, f.depth) AS caller
    FROM named n JOIN frames f ON f.capture_id = n.capture_id AND f.thread_id IS NOT DISTINCT FROM n.thread_id
    WHERE f.depth > n.at_depth AND NOT f.is_native AND f.file NOT LIKE 'torch/%'
      AND (n.at_pkg IS NULL OR f.pkg IS DISTINCT FROM n.at_pkg)
    GROUP BY ALL
),
threads AS (
    SELECT t.*, n.at_frame, n.native_frame, c.caller,
           CASE WHEN t.event_loop IS NOT NULL THEN ', in the serving loop ' || t.event_loop
                WHEN n.init_frame IS NOT NULL
                THEN ', in init frames (' || n.init_frame || ', no event loop)'
                     || CASE WHEN t.in_op OR t.thread_state = 'idle' THEN ': a start-up hang' ELSE '' END
                ELSE '' END AS phase,
           CASE WHEN t.crash IS NOT NULL AND t.thread_state = 'current' THEN 'crash'
                WHEN t.in_op THEN 'wait' WHEN t.thread_state = 'current' THEN 'dumped'
                ELSE coalesce(t.thread_state, '') END AS verb,
           CASE WHEN NOT t.in_op THEN NULL
                WHEN t.wait_class = 'cuda_sync' THEN 'a device synchronize'
                ELSE t.wait_class || coalesce(' (' || t.backend || ')', '') END AS op,
           CASE WHEN t.is_rank THEN concat_ws(' ', 'DP' || t.dp_rank, 'PP' || t.pp_rank) ELSE '' END AS lab_prefix,
           CASE WHEN t.is_rank AND t.tp_rank IS NOT NULL THEN 'TP' WHEN t.is_rank THEN ''
                WHEN t.pid IS NOT NULL THEN 'pid '
                -- a thread header pasted without its id (batch14/05) names no thread
                WHEN t.thread_id IS NOT NULL THEN 'thread ' ELSE '' END AS unit,
           CASE WHEN t.is_rank THEN t.tp_rank WHEN t.pid IS NOT NULL THEN t.pid ELSE t.thread_id END AS num,
           concat_ws(' ', CASE WHEN t.is_rank THEN 'EP' || t.ep_rank END,
                     CASE WHEN NOT t.is_main AND (t.is_rank OR t.pid IS NOT NULL) THEN 'thread ' || t.thread_id END,
                     -- an SGLang process without a rank is named by its title (sglang::data_parallel_controller)
                     CASE WHEN NOT t.is_rank AND t.process_name LIKE 'sglang::%' THEN t.process_name END)
               AS lab_suffix,
           t.process_name LIKE 'sglang::scheduler%' AS is_scheduler,
           nullif(t.role, 'unknown') AS known_role
    FROM told t
    JOIN named n ON n.capture_id = t.capture_id AND n.thread_id IS NOT DISTINCT FROM t.thread_id
    LEFT JOIN callers c ON c.capture_id = t.capture_id AND c.thread_id IS NOT DISTINCT FROM t.thread_id
),
keyed AS (
    SELECT *, md5(concat_ws('|', op, verb, at_frame, native_frame, caller, phase, known_role)) AS gkey FROM threads
),
labels AS (
    -- one label per member of a group; consecutive numbers of one prefix become a range (TP0-TP3)
    SELECT gkey, lab_prefix, unit, lab_suffix, min(num) AS lo, max(num) AS hi
    FROM (SELECT DISTINCT gkey, lab_prefix, unit, lab_suffix, num,
                 num - dense_rank() OVER (PARTITION BY gkey, lab_prefix, unit, lab_suffix ORDER BY num) AS island
          FROM keyed)
    GROUP BY gkey, lab_prefix, unit, lab_suffix, island
),
label_text AS (
    SELECT gkey, min(lo) AS first_num,
           string_agg(concat_ws(' ', nullif(lab_prefix, ''),
                                nullif(unit || coalesce(CAST(lo AS VARCHAR), '')
                                       || CASE WHEN hi > lo THEN '-' || CASE WHEN unit = 'TP' THEN 'TP' ELSE '' END || hi
                                               ELSE '' END, ''),
                                nullif(lab_suffix, '')),
                      ', ' ORDER BY lab_prefix, lo) AS members
    FROM labels GROUP BY gkey
),
groups AS (
    SELECT k.gkey, any_value(k.op) AS op, any_value(k.verb) AS verb, any_value(k.at_frame) AS at_frame,
           any_value(k.native_frame) AS native_frame, any_value(k.caller) AS caller, any_value(k.phase) AS phase,
           any_value(k.known_role) AS known_role, count(*) AS n_threads,
           -- a rank dumped in two rounds is one member of the group, in two dumps
           count(DISTINCT concat_ws('|', k.lab_prefix, k.unit, k.num, k.lab_suffix)) AS n_members,
           bool_and(k.is_rank) AS all_rank, bool_and(k.is_scheduler) AS all_scheduler,
           bool_and(k.is_rank OR k.pid IS NOT NULL) AS all_process, bool_and(k.is_main) AS all_main,
           any_value(l.members) AS members, any_value(l.first_num) AS first_num
    FROM keyed k JOIN label_text l ON l.gkey = k.gkey
    GROUP BY k.gkey
),
group_text AS (
    SELECT *,
           n_members || ' ' || coalesce(known_role || ' ', '')
           || CASE WHEN all_rank AND all_scheduler THEN 'scheduler rank' WHEN all_rank THEN 'rank'
                   WHEN all_process THEN 'process' WHEN all_main THEN 'main thread' ELSE 'thread' END
           || CASE WHEN n_members = 1 THEN '' WHEN all_process AND NOT all_rank THEN 'es' ELSE 's' END
           || CASE WHEN all_rank THEN ' ' || members WHEN members <> '' THEN ' (' || members || ')' ELSE '' END
           || CASE WHEN n_threads > n_members THEN ' (' || n_threads || ' dumps)' ELSE '' END
           || ' ' || CASE WHEN verb = 'crash' THEN 'crashed'
                          -- faulthandler's current thread without a fatal line read: where it was, no more
                          WHEN verb = 'dumped' THEN 'was the current thread of the dump'
                          WHEN verb = 'wait' THEN CASE WHEN n_members = 1 THEN 'waits' ELSE 'wait' END
                          WHEN n_members = 1 THEN 'is ' || nullif(verb, '') ELSE 'are ' || nullif(verb, '') END
           || ' in ' || coalesce(op || ': ' || at_frame, native_frame || ' inside ' || at_frame, at_frame)
           || coalesce(' under ' || caller, '') || phase
           || CASE WHEN op IS NULL AND n_members = 1 THEN '; no frame of its stack names a collective'
                   WHEN op IS NULL THEN '; no frame of their stacks names a collective' ELSE '' END AS text
    FROM groups
),
failed AS MATERIALIZED (  -- read three times below: every record's text searched once
    -- SGLang's own py-spy attempts that failed: a record "[ts …] Pyspy failed …" or "… All pyspy dump
    -- attempts failed for PID N" (the record header first, so a note quoting it is no failure)
    SELECT event_id,
           coalesce(nullif(regexp_extract(message, 'PID (\d+)', 1), ''), nullif(regexp_extract(message, '--pid (\d+)', 1), ''))
               AS pid
    FROM records
    WHERE regexp_matches(message, '(^|\] )(Pyspy failed|All pyspy dump attempts failed)')
),
dumps AS (
    SELECT min(capture_ts) AS ts, max(capture_ts) AS end_ts,
           count(DISTINCT capture_id)::BIGINT AS n,
           -- a process dumped in two rounds is one process, in two dumps
           count(DISTINCT concat_ws('|', host, coalesce(CAST(pid AS VARCHAR), 'capture ' || capture_id))) AS processes,
           count(DISTINCT capture_id) FILTER (WHERE dump_event IS NOT NULL) AS by_sglang,
           count(DISTINCT capture_id) FILTER (WHERE crash IS NOT NULL) AS by_crash,
           -- faulthandler dumps whose "Fatal Python error" line was not read (a current thread, no crash record)
           count(DISTINCT capture_id) FILTER (WHERE crash IS NULL AND thread_state = 'current') AS by_fh,
           string_agg(DISTINCT crash, ', ') AS crashes,
           CASE WHEN count(DISTINCT coalesce(role, '?')) = 1 THEN nullif(any_value(role), 'unknown') END AS role,
           CASE WHEN count(DISTINCT coalesce(host, '?')) = 1 THEN any_value(host) END AS host,
           coalesce(list_sort(list_distinct(list(concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank,
                                                        'EP' || ep_rank)) FILTER (WHERE is_rank))),
                    CAST([] AS VARCHAR[])) AS ranks,
           list_distinct(list(dump_event) FILTER (WHERE dump_event IS NOT NULL)) AS dump_events,
           string_agg(DISTINCT CAST(pid AS VARCHAR), ', ') FILTER (WHERE dump_event IS NOT NULL) AS sglang_pids,
           bool_or(is_rank OR process_name LIKE 'sglang::scheduler%') AS any_rank, bool_or(in_op) AS any_in_op,
           bool_or(process_name LIKE 'sglang::%') AS any_sglang_title
    FROM told
)
SELECT d.ts, d.end_ts, 'stacks_captured' AS kind, d.role, d.host, d.ranks, d.n,
       CASE WHEN d.by_crash = d.n
            THEN 'faulthandler dump' || CASE WHEN d.n = 1 THEN '' ELSE 's' END || ' at the crash ("Fatal Python error: '
                 || d.crashes || '") of '
            WHEN d.by_fh > 0 AND d.by_crash + d.by_fh = d.n
            THEN 'faulthandler dump' || CASE WHEN d.n = 1 THEN '' ELSE 's' END || ' of '
            ELSE 'py-spy dumps of ' END || d.processes || ' process' || CASE WHEN d.processes = 1 THEN '' ELSE 'es' END
       || CASE WHEN d.n > d.processes THEN ' (' || d.n || ' dumps)' ELSE '' END || ': '
       || (SELECT string_agg(text, '; ' ORDER BY op IS NULL, n_threads DESC, first_num) FROM group_text)
       || CASE WHEN d.by_crash = d.n
               THEN ' (printed by CPython''s faulthandler in the crash record, not py-spy: where each thread was when the process crashed)'
               WHEN d.by_fh > 0 AND d.by_crash + d.by_fh = d.n
               THEN ' (printed by CPython''s faulthandler, not py-spy; its "Fatal Python error" line, which names the'
                    || ' signal when a fatal error printed it, was not read)'
               WHEN d.by_crash > 0
               THEN ' (' || d.by_crash || ' of them faulthandler dumps at a crash ("Fatal Python error: ' || d.crashes
                    || '"), not py-spy)'
               WHEN d.by_sglang = d.n
               THEN ' (logged by SGLang''s watchdog or crash diagnostics: "Pyspy dump for PID ' || d.sglang_pids || '")'
               WHEN d.by_sglang = 0 THEN ' (bare py-spy output, no SGLang record header)'
               ELSE ' (' || d.by_sglang || ' of them logged by SGLang: "Pyspy dump for PID ' || d.sglang_pids
                    || '"; the others bare py-spy output)' END
       || coalesce((SELECT '; SGLang''s py-spy failed on PID ' || string_agg(DISTINCT pid, ', ') || ' ('
                           || count(*) || ' record' || CASE WHEN count(*) = 1 THEN '' ELSE 's' END || ')'
                    FROM failed WHERE pid IS NOT NULL), '')
       -- no scheduler rank dumped and no thread in an op: nothing in the dumps is a stuck rank (batch5/01:
       -- a soft watchdog's dump of the DP controller), said with what else was read of that time
       || CASE WHEN NOT d.any_rank AND NOT d.any_in_op AND d.by_crash = 0 AND d.by_fh = 0
               -- outside SGLang (a training job, vLLM) there are no scheduler ranks to speak of: no rank is named
               THEN CASE WHEN d.any_sglang_title OR d.by_sglang > 0
                         THEN '; no dumped process is a scheduler rank and none waits in an op, so the dumps show no hung rank'
                         ELSE '; no dumped process names a rank and none waits in an op, so the dumps show no hung rank' END
                    || CASE WHEN NOT EXISTS (SELECT 1 FROM watchdogs) THEN ', and no watchdog record was read' ELSE '' END
                    || coalesce((SELECT '; the last batch line of the same log, '
                                        || round(epoch(d.ts) - epoch(max(b.ts)), 3) || ' s before the first dump'
                                 FROM batches b JOIN events e USING (event_id)
                                 -- the branch's condition again: a scan of no batch when the branch is not taken
                                 WHERE NOT d.any_rank AND NOT d.any_in_op AND d.by_crash = 0
                                   AND e.source IN (SELECT source FROM told) AND b.ts <= d.ts), '')
               ELSE '' END AS summary,
       list_concat(d.dump_events, coalesce((SELECT list(event_id ORDER BY event_id) FROM failed), [])) AS evidence,
       'captures and stacks (main threads and threads in an op; rule stacks_captured), events (Pyspy dump/failed records)'
           AS rests_on
FROM dumps d
WHERE d.n > 0
