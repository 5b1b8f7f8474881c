-- question: Which collectives timed out (the NCCL/HCCL/gloo watchdog: op, sequence number, timeout,
--   ranks) and where did SGLang's own scheduler watchdog fire?
-- tables: watchdogs, events
-- columns:
--   ts        the first watchdog record of the group (UTC; NULL when the lines print no year)
--   end_ts    the last one (UTC)
--   kind      collective_timeout (a PyTorch process-group watchdog caught a collective past its timeout, or
--             Gloo's transport timed a recv or send of a gloo collective out: watchdogs.gloo_timeout),
--             collective_error (the NCCL watchdog thread ended on an NCCL or CUDA error, no timeout)
--             watchdog_hang (c10d's heartbeat monitor: the NCCL watchdog thread itself got stuck; no collective)
--             or scheduler_watchdog (SGLang's watchdog: the scheduler advanced nothing for its timeout)
--   role      role of the records
--   host      host
--   ranks     the ranks, e.g. [rank 0, rank 1] (torch global ranks), [PG 3 rank 5] (a rank of another
--             process group, as printed) or [TP0, TP1]
--   n         watchdog records in the group
--   summary   the finding in words: backend, op, SeqNum, timeout, how long it ran, another rank's timeout in
--             a different collective at the same SeqNum (a desync), last completed work; for SGLang's watchdog
--             the KV pools printed right before it (available of total, evictable);
--             for an error its reason, NCCL result (ncclRemoteError, …) and the remote peer it names; the
--             C++ exception the process terminated with (watchdogs.exception)
--   evidence  events.event_id of the records, then of the work-state records whose numbers it states, of
--             any rank's work state at the same SeqNum and of c10d's follow-up lines of its ranks (FlightRecorder,
--             "signal dumping", "Some NCCL operations have failed or timed out", "preparing to dump debug info")
--   rests_on  the tables behind it
-- parameters: none.
-- reading: one row per (kind, role, host, backend, op, timeout, island of consecutive SeqNums): ranks one
--   or two collectives apart are one stall, each rank's SeqNum said. An op the parser did not read
--   is "not printed" only when no record of the group prints OpType=, else "printed but not read". A last completed work of -1
--   means no collective of the group ever completed (a hang at the first one: start-up or a peer that
--   never joined). A comment line (`#` first) counts in none.
WITH w AS (
    -- a rank's "Timeout at NCCL work: N" (c10d prints it only when that work timed out) is its collective
    -- timeout when no WorkNCCL line of the rank was read (sglang#3932, batch24/01: rank 3's work state lines
    -- alone, the WorkNCCL line above the paste): op and timeout not printed
    SELECT w.* REPLACE (CASE WHEN w.watchdog_kind = 'collective_work_state' THEN 'nccl_watchdog'
                             ELSE w.watchdog_kind END AS watchdog_kind,
                        CASE WHEN w.watchdog_kind = 'gloo_timeout' THEN NULL ELSE w.nccl_op END AS nccl_op),
           -- Gloo's transport op (recv, send): the ops of one stall said together, never a finding each
           -- (batch22/01: the recv and the send of one all-gather timed out, each its own RuntimeError line)
           CASE WHEN w.watchdog_kind = 'gloo_timeout' THEN w.nccl_op END AS transport_op,
           e.message, e.printed_time,
           -- the process group the line prints (`[PG 1 Rank 0]`, `[PG ID 1 …]`); NULL for `[Rank 0]`, which
           -- some versions print for any group (batch10/09: `[Rank 0]` timeout, `[PG 1 Rank 0]` work state)
           nullif(regexp_extract(e.message, '\[PG (?:ID )?(\d+)', 1), '') AS pg,
           CASE WHEN e.message ILIKE '%HCCL%' THEN 'HCCL' WHEN e.message ILIKE '%gloo%' THEN 'gloo' ELSE 'NCCL' END AS backend,
           CASE WHEN w.watchdog_kind IN ('nccl_watchdog', 'gloo_timeout', 'nccl_error', 'heartbeat_timeout', 'collective_work_state')
                -- a rank of another process group than the default one is no global rank: said as printed
                THEN coalesce('rank ' || w.tp_rank,
                              nullif(regexp_replace(regexp_extract(e.message, '\[PG (?:ID )?\d+[^\]\n]*? Rank \d+\]'),
                                                    '^\[PG (?:ID )?(\d+)[^\]\n]*? Rank (\d+)\]$', 'PG \1 rank \2'), ''))
                ELSE concat_ws(' ', 'DP' || w.dp_rank, 'PP' || w.pp_rank, 'TP' || w.tp_rank, 'EP' || w.ep_rank) END AS rank_label
    FROM watchdogs w LEFT JOIN records e ON e.event_id = w.event_id
    WHERE (w.watchdog_kind IN ('nccl_watchdog', 'gloo_timeout', 'nccl_error', 'watchdog_timeout', 'heartbeat_timeout')
           OR w.watchdog_kind = 'collective_work_state'
              AND regexp_matches(e.message, 'Timeout at (?:NCCL |HCCL )?work: \d+')
              AND NOT EXISTS (SELECT 1 FROM watchdogs x WHERE x.watchdog_kind = 'nccl_watchdog'
                                 AND x.tp_rank IS NOT DISTINCT FROM w.tp_rank AND x.host IS NOT DISTINCT FROM w.host))
      -- a comment line (`#` first: a paste's note quoting a line it dropped) is no watchdog record, as in
      -- cuda.sql and unexplained.sql (batch19/02's note: "… WorkNCCL(SeqNum=469508, OpType=ALLR")
      AND NOT starts_with(ltrim(coalesce(e.message, '')), '#')
),
-- SGLang's KV pools as printed right before its scheduler watchdog fired (the record before the watchdog's in the
-- same input, a line per pool: `[full] total=1939712, available=256, evictable=1935360, protected=0, …`, sglang
-- issue 30532, batch20/06): what the pools held when the scheduler stopped, said with the watchdog
pool AS (
    SELECT w.event_id, p.event_id AS pool_id,
           list_transform(regexp_extract_all(p.message, '(?m)^[ \t]*\[\w+\] +total=\d+, +available=\d+(?:, +evictable=\d+)?'),
                          lambda l: regexp_extract(l, '\[(\w+)\]', 1) || ': ' || regexp_extract(l, 'available=(\d+)', 1)
                                    || ' of ' || regexp_extract(l, 'total=(\d+)', 1) || ' available'
                                    || coalesce(', ' || nullif(regexp_extract(l, 'evictable=(\d+)', 1), '') || ' evictable', '')) AS pools
    FROM w JOIN records p ON p.source = w.source AND p.event_id = w.event_id - 1
    WHERE w.watchdog_kind = 'watchdog_timeout' AND p.kind = 'other'
      AND regexp_matches(p.message, '(?m)^[ \t]*\[\w+\] +total=\d+, +available=\d+')
),
state AS (  -- ProcessGroup's last enqueued/completed work, per rank
    SELECT role, host, tp_rank, max(last_enqueued) AS last_enqueued, min(last_completed) AS last_completed,
           list(event_id) AS state_ids
    FROM watchdogs WHERE watchdog_kind = 'collective_work_state' GROUP BY ALL
),
same_work AS (  -- a rank's work state at the very work (SeqNum) that timed out: that timeout's, whatever the
                -- rank, when the rank printed no timeout of its own (its watchdog line may be cut off the paste:
                -- batch10/09's rank 3); a rank's own timeout takes its state through `state` above, never another
                -- rank's finding (batch19/01: rank 7's state is no evidence of rank 3's ALLREDUCE)
    SELECT s.host, s.nccl_seq, list(s.event_id ORDER BY s.event_id) AS ids
    FROM watchdogs s
    WHERE s.watchdog_kind = 'collective_work_state' AND s.nccl_seq IS NOT NULL
      AND (s.tp_rank IS NULL
           OR NOT EXISTS (SELECT 1 FROM w WHERE w.watchdog_kind = 'nccl_watchdog' AND w.tp_rank = s.tp_rank
                                                AND w.host IS NOT DISTINCT FROM s.host))
    GROUP BY ALL
),
-- Ranks that timed out at one SeqNum of one process group in different collectives (batch19/01: rank 7 in
-- BROADCAST, rank 3 in ALLREDUCE, both SeqNum 80078) did not call the same collective at that point: a desync
-- of their code paths, said on each rank's finding.
clash AS (
    SELECT a.event_id, a.nccl_seq, coalesce(nullif(b.rank_label, ''), 'a rank') || ' in ' || b.nccl_op AS other
    FROM w a JOIN w b
      ON a.watchdog_kind = 'nccl_watchdog' AND b.watchdog_kind = 'nccl_watchdog' AND a.host IS NOT DISTINCT FROM b.host
     AND a.nccl_seq = b.nccl_seq AND a.nccl_op <> b.nccl_op AND (a.pg IS NULL OR b.pg IS NULL OR a.pg = b.pg)
),
-- The ranks of one stall print different SeqNums when one rank is a collective or two behind (batch13/02:
-- rank 0 waits on 5730 while rank 3 is still on 5729): consecutive SeqNums of one op and timeout are one
-- island, one finding; a gap of more than one starts another.
isl AS (
    SELECT w.*, sum(CASE WHEN w.nccl_seq IS NULL OR w.prev_seq IS NULL OR w.nccl_seq - w.prev_seq <= 1 THEN 0 ELSE 1 END)
               OVER (PARTITION BY w.watchdog_kind, w.role, w.host, w.backend, w.nccl_op, w.timeout_s
                     ORDER BY w.nccl_seq, w.event_id) AS island
    FROM (SELECT w.*, lag(w.nccl_seq) OVER (PARTITION BY w.watchdog_kind, w.role, w.host, w.backend, w.nccl_op, w.timeout_s
                                            ORDER BY w.nccl_seq, w.event_id) AS prev_seq
          FROM w) w
),
g AS (
    SELECT CASE w.watchdog_kind WHEN 'nccl_watchdog' THEN 'collective_timeout' WHEN 'gloo_timeout' THEN 'collective_timeout'
                WHEN 'nccl_error' THEN 'collective_error'
                WHEN 'heartbeat_timeout' THEN 'watchdog_hang' ELSE 'scheduler_watchdog' END AS kind,
           w.role, w.host, w.backend, w.nccl_op, w.timeout_s, w.island,
           max(w.nccl_seq) AS nccl_seq, min(w.nccl_seq) AS low_seq, list_distinct(list(w.nccl_seq)) AS seqs,
           -- each rank's SeqNum, where the ranks of the island print more than one
           string_agg(DISTINCT w.rank_label || ' at SeqNum ' || w.nccl_seq, ', ' ORDER BY w.rank_label || ' at SeqNum ' || w.nccl_seq)
               FILTER (WHERE w.rank_label <> '' AND w.nccl_seq IS NOT NULL) AS rank_seqs,
           min(w.ts) AS ts, max(w.ts) AS end_ts, count(*)::BIGINT AS n, max(w.ran_for_ms) AS ran_for_ms,
           min(w.reason) AS reason, min(w.exception) AS thrown, min(w.nccl_error) AS nccl_error,
           min(w.peer) AS peer,
           bool_or(contains(w.message, 'OpType=')) AS op_in_text,
           string_agg(DISTINCT w.transport_op, ' and ' ORDER BY w.transport_op) AS transport_ops,
           -- a time printed without a year or a date (events.printed_time: glog/c10's E223 11:14:34 is
           -- 02-23 11:14:34, its level letter no part of it): quoted as printed, never dated
           CASE WHEN min(w.printed_time) LIKE '__-__ %' THEN 'year: ' ELSE 'date: ' END || min(w.printed_time)
               AS yearless,
           list_sort(list_distinct(list(w.rank_label) FILTER (WHERE w.rank_label <> ''))) AS ranks,
           list(w.event_id ORDER BY w.ts, w.event_id) AS timeouts,
           list_distinct(list(w.source)) AS sources, list_distinct(list(w.tp_rank) FILTER (WHERE w.tp_rank IS NOT NULL)) AS tps,
           list_sort(list_distinct(flatten(list(s.state_ids) FILTER (WHERE s.state_ids IS NOT NULL)))) AS state_ids,
           max(s.last_enqueued) AS last_enqueued, min(s.last_completed) AS last_completed,
           any_value(pp.pools) AS pools, list(pp.pool_id) FILTER (WHERE pp.pool_id IS NOT NULL) AS pool_ids
    FROM isl w LEFT JOIN state s
      ON s.tp_rank IS NOT DISTINCT FROM w.tp_rank AND s.host IS NOT DISTINCT FROM w.host AND w.watchdog_kind = 'nccl_watchdog'
    LEFT JOIN pool pp ON pp.event_id = w.event_id
    GROUP BY w.watchdog_kind, w.role, w.host, w.backend, w.nccl_op, w.timeout_s, w.island
),
-- c10d's own lines after a collective timeout, error or watchdog hang on the same rank, its FATAL line among them:
-- no failure of their own (batch13/02's
-- FlightRecorder and "signal dumping" lines, batch5/07's and batch8/07's "Some NCCL operations have failed or timed
-- out"): the same input within 20 records of the group's (untimed c10d lines print no date), or within a minute
follow AS (
    SELECT g.kind, g.role, g.host, g.island, g.backend, g.nccl_op, g.timeout_s, list(e.event_id ORDER BY e.event_id) AS ids
    FROM g JOIN records e
      ON g.kind IN ('collective_timeout', 'collective_error', 'watchdog_hang') AND e.host IS NOT DISTINCT FROM g.host
     AND list_contains(g.tps, e.tp_rank) AND NOT list_contains(g.timeouts, e.event_id)
     AND ((list_contains(g.sources, e.source) AND e.event_id BETWEEN list_min(g.timeouts) - 20 AND list_max(g.timeouts) + 20)
          OR e.ts BETWEEN g.ts - INTERVAL 1 SECOND AND g.end_ts + INTERVAL 60 SECOND)
    WHERE regexp_matches(e.message, 'ProcessGroupNCCL\.cpp:\d+\].*(Some NCCL operations have failed or timed out|To avoid data inconsistency, we are taking the entire process down|Stack trace of the failed collective not found|to signal dumping|preparing to dump debug info|[Rr]eceived a (?:global )?dump signal|flight recorder dump signal)')
       -- its FATAL line (`[rank6]:[F429 … ProcessGroupNCCL.cpp:1554]`: the monitor terminating the process, batch13/03)
       OR regexp_matches(e.message, '^(?:\[rank\d+\]:)?\[F\d*[ \d:.]*ProcessGroupNCCL\.cpp:\d+\]')
    GROUP BY ALL
)
SELECT ts, end_ts, kind, role, host, ranks, n,
       CASE WHEN kind = 'collective_timeout' THEN
            'Collective timeout (' || backend || CASE WHEN transport_ops IS NULL THEN ' watchdog' ELSE ' transport' END || ') on '
            || coalesce(nullif(array_to_string(ranks, ', '), ''), 'no rank read')
            || coalesce(CASE WHEN date_trunc('second', end_ts) > date_trunc('second', ts) THEN ' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC')
                     ELSE ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') END,
                     ' (no time read' || coalesce('; printed without a ' || yearless, '') || ')')
            || ': ' || coalesce(nccl_op, 'a ' || transport_ops || ' of a gloo collective waited (the collective is not printed)',
                                CASE WHEN op_in_text THEN 'op printed (OpType=) but not read' ELSE 'op not printed' END) || CASE WHEN low_seq < nccl_seq
                    THEN ', ' || rank_seqs || ' (' || (nccl_seq - low_seq) || ' collective(s) apart: the rank(s) at SeqNum '
                         || low_seq || ' are behind),'
                    ELSE coalesce(CASE WHEN nccl_op IS NULL THEN ',' ELSE '' END || ' SeqNum ' || nccl_seq, '') END
            || coalesce(' ran ' || ran_for_ms || ' ms', '') || coalesce(', past its ' || round(timeout_s)::BIGINT || ' s timeout', '')
            || coalesce('; at the same SeqNum ' || clash_seq || ' another collective timed out (' || clash_others
                        || '): the ranks called different collectives at one sequence number (a desync)', '')
            || coalesce('; last completed work ' || last_completed
                        || CASE WHEN last_completed < 0 THEN ' (no collective of the group ever completed)' ELSE '' END, '')
            || coalesce(', last enqueued ' || last_enqueued, '')
            || coalesce('; the process terminated with ' || thrown, '')
       WHEN kind = 'collective_error' THEN
            backend || ' watchdog thread ended on an error, not a timeout, on ' || coalesce(nullif(array_to_string(ranks, ', '), ''), 'no rank read')
            || coalesce(CASE WHEN date_trunc('second', end_ts) > date_trunc('second', ts) THEN ' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC')
                     ELSE ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') END,
                     ' (no time read' || coalesce('; printed without a ' || yearless, '') || ')')
            || coalesce(': ' || reason, '') || coalesce('; ' || nccl_error, '') || coalesce('; remote peer ' || peer, '')
            || coalesce('; the process terminated with ' || thrown, '')
       WHEN kind = 'watchdog_hang' THEN
            backend || ' watchdog hang (c10d heartbeat monitor) on ' || coalesce(nullif(array_to_string(ranks, ', '), ''), 'no rank read')
            || coalesce(CASE WHEN date_trunc('second', end_ts) > date_trunc('second', ts) THEN ' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC')
                     ELSE ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') END,
                     ' (no time read' || coalesce('; printed without a ' || yearless, '') || ')')
            || ': the watchdog thread itself made no progress'
            || coalesce(' for ' || round(timeout_s)::BIGINT || ' s', '')
            || ' (a hang inside NCCL or CUDA; no collective named), so the monitor ends the process'
       ELSE
            'SGLang''s scheduler watchdog fired'  -- an unknown role is left out, never printed
            || coalesce(' on ' || nullif(concat_ws(' ', nullif(role, 'unknown'), nullif(array_to_string(ranks, ', '), '')), ''), '')
            || coalesce(CASE WHEN date_trunc('second', end_ts) > date_trunc('second', ts) THEN ' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC')
                     ELSE ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') END,
                     ' (no time read' || coalesce('; printed without a ' || yearless, '') || ')')
            || coalesce(' (timeout ' || round(timeout_s)::BIGINT || ' s)', '') || ': the scheduler made no progress for that long'
            || coalesce('; the KV pools printed just before it: ' || nullif(array_to_string(pools, '; '), ''), '')
       END AS summary,
       list_concat(timeouts,
                   list_filter(list_distinct(list_concat(list_concat(list_concat(coalesce(state_ids, []), coalesce(pool_ids, [])),
                                                                     coalesce(same_ids, [])),
                                                         coalesce(follow_ids, []))),
                               lambda x: NOT list_contains(timeouts, x))) AS evidence,
       'watchdogs (' || CASE WHEN transport_ops IS NOT NULL THEN 'gloo_timeout'
                             WHEN kind = 'collective_timeout' THEN 'nccl_watchdog with collective_work_state'
                             WHEN kind = 'collective_error' THEN 'nccl_error' WHEN kind = 'watchdog_hang' THEN 'heartbeat_timeout'
                             ELSE 'watchdog_timeout' END || ')' AS rests_on
FROM (SELECT g.*, (SELECT list_sort(flatten(list(sw.ids))) FROM same_work sw
                    WHERE g.kind = 'collective_timeout' AND list_contains(g.seqs, sw.nccl_seq)
                      AND sw.host IS NOT DISTINCT FROM g.host) AS same_ids,
             (SELECT any_value(f.ids) FROM follow f
               WHERE f.kind = g.kind AND f.role IS NOT DISTINCT FROM g.role AND f.host IS NOT DISTINCT FROM g.host
                 AND f.island = g.island AND f.backend = g.backend AND f.nccl_op IS NOT DISTINCT FROM g.nccl_op
                 AND f.timeout_s IS NOT DISTINCT FROM g.timeout_s) AS follow_ids,
             (SELECT min(c.nccl_seq) FROM clash c WHERE list_contains(g.timeouts, c.event_id)) AS clash_seq,
             (SELECT string_agg(DISTINCT c.other, ', ' ORDER BY c.other) FROM clash c
               WHERE list_contains(g.timeouts, c.event_id)) AS clash_others
      FROM g) g
ORDER BY ts NULLS LAST
