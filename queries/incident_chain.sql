-- question: What is the incident chain, step by step: abort burst → transfer_infos assertion(s) →
--   last batch (the stop) → /health meanwhile → stuck stacks → restart → ready → batches again,
--   with the evidence line of each step?
-- tables: aborts, events, requests, abort_to_assert, wedge, desync
-- columns:
--   step_no        1 abort_burst, 2 assertion, 3 last_batch, 4 health, 5 stuck_stacks, 6 restart,
--                  7 ready, 8 resumed: the order of the chain, not of the clock
--   step           the step's name (same list)
--   ts             when the step began (UTC)
--   end_ts         when it ended (UTC; the burst's last abort, the last assertion, the restart …)
--   role           the role of the step (NULL for a burst over several roles)
--   ranks          the ranks involved, e.g. "TP0,TP1,TP3"
--   bootstrap_room the room of an assertion step
--   detail         the step in words and numbers
--   event_id       events.event_id of the evidence record (NULL for a py-spy capture from a file)
--   source         file or journal of the evidence
--   source_pos     its line number, byte offset or journal cursor
--   message        the first line of the evidence record (for stuck_stacks: the capture id)
-- parameters:
--   burst_gap_s   aborts less than this many seconds apart belong to one burst (DOUBLE; default 5)
--   burst_min     a burst has at least this many abort records (BIGINT; default 5)
-- reading: rows in time order (step_no says which step of the chain a row is). The abort burst shown is the last one that began before the first
--   assertion (or, without one, before the first stop; else the largest). An assertion row per room
--   and role; a last_batch and a health row per stop of a role that wedge reports as wedged or stalled;
--   a stuck_stacks row per role from desync (lockstep or divergent with the groups); restart, ready ("fired up and ready to
--   roll") and resumed rows per stop or restart of a role. A step with no row has no evidence in the
--   data (see coverage).
--   The parameters of abort_to_assert and wedge (room, since, until, min_gap_s) apply here too.
WITH params AS (
    SELECT
        coalesce(getvariable('burst_gap_s')::DOUBLE, 5.0) AS burst_gap_s,
        coalesce(getvariable('burst_min')::BIGINT, 5) AS burst_min
),
w AS MATERIALIZED (
    -- the stop's source and position come from its events row below, with every other step's: wedge's
    -- own (the batches table's) would read every batch line's position once more
    SELECT * EXCLUDE (source, source_pos) FROM wedge
    WHERE verdict LIKE 'wedged%' OR verdict LIKE 'stalled%' OR verdict LIKE 'restarted%'
),
stops AS (
    SELECT * FROM w WHERE verdict LIKE 'wedged%' OR verdict LIKE 'stalled%'
),
restarted AS (
    SELECT * FROM w
),
asserted AS (
    -- the evidence: the first assertion record (by time, then event id: the same answer every run
    -- when two inputs hold the same record, e.g. a journal and its export)
    SELECT bootstrap_room, assert_role, arg_min(assert_tp_ranks, k) AS tp_ranks, arg_min(assert_count, k) AS n,
           min(assert_first_ts) AS first_ts, max(assert_last_ts) AS last_ts,
           CASE WHEN len(arg_min(assert_tp_ranks, k)) > 0
                THEN 'TP' || array_to_string(arg_min(assert_tp_ranks, k), ',TP') ELSE 'rank unknown' END AS ranks,
           arg_min(assert_event_id, k) AS event_id, arg_min(assert_source, k) AS source,
           arg_min(assert_source_pos, k) AS source_pos,
           count(abort_event_id) FILTER (WHERE delta_ms >= 0) AS aborts_before,
           max(delta_ms) FILTER (WHERE delta_ms >= 0) AS first_abort_ms,
           min(delta_ms) FILTER (WHERE delta_ms >= 0) AS last_abort_ms
    FROM (SELECT *, (assert_first_ts, assert_event_id) AS k FROM abort_to_assert WHERE asserted)
    GROUP BY bootstrap_room, assert_role
),
anchor AS (
    SELECT coalesce((SELECT min(first_ts) FROM asserted), (SELECT min(stopped_ts) FROM stops)) AS ts
),
ab AS (
    SELECT a.*,
        CASE WHEN epoch_us(a.ts) - epoch_us(lag(a.ts) OVER (ORDER BY a.ts, a.event_id)) <= p.burst_gap_s * 1e6
             THEN 0 ELSE 1 END AS starts_burst
    FROM aborts AS a, params AS p
),
ab_id AS (
    SELECT *, sum(starts_burst) OVER (ORDER BY ts, event_id ROWS UNBOUNDED PRECEDING) AS burst_id FROM ab
),
bursts AS (
    SELECT burst_id, min(ts) AS start_ts, max(ts) AS end_ts, count(*) AS n,
           count(DISTINCT rid) AS rids, count(DISTINCT bootstrap_room) AS rooms,
           string_agg(DISTINCT role, ',' ORDER BY role) AS roles,
           arg_min(event_id, (ts, event_id)) AS event_id, arg_min(source, (ts, event_id)) AS source,
           arg_min(source_pos, (ts, event_id)) AS source_pos
    FROM ab_id GROUP BY burst_id
    HAVING count(*) >= (SELECT burst_min FROM params)
),
burst_kinds AS (
    SELECT burst_id, string_agg(abort_kind || ' ' || n, ', ' ORDER BY n DESC, abort_kind) AS kinds
    FROM (SELECT burst_id, coalesce(abort_kind, '?') AS abort_kind, count(*) AS n FROM ab_id GROUP BY ALL)
    GROUP BY burst_id
),
burst AS (
    SELECT b.* FROM bursts AS b, anchor AS a
    ORDER BY CASE WHEN a.ts IS NOT NULL AND b.start_ts <= a.ts THEN 0 ELSE 1 END,
             CASE WHEN a.ts IS NOT NULL AND b.start_ts <= a.ts THEN b.start_ts END DESC NULLS LAST,
             b.n DESC, b.start_ts
    LIMIT 1
),
stuck AS (
    SELECT role, min(verdict) AS verdict, min(groups) AS groups,
           min(capture_ts) AS first_ts, max(capture_ts) AS last_ts,
           string_agg(rank_label, ',' ORDER BY pp_rank, tp_rank, rank_label, capture_id) AS ranks,
           count(*) FILTER (WHERE is_rank) AS n_ranks, count(*) FILTER (WHERE NOT is_rank) AS n_other,
           arg_max(capture_id, (coalesce(capture_ts, '-infinity'::TIMESTAMPTZ), capture_id)) AS capture_id,
           arg_max(source, (coalesce(capture_ts, '-infinity'::TIMESTAMPTZ), capture_id)) AS source,
           arg_max(source_pos, (coalesce(capture_ts, '-infinity'::TIMESTAMPTZ), capture_id)) AS source_pos,
           count(*) FILTER (WHERE capture_ts IS NULL) AS untimed
    FROM desync GROUP BY role
),
steps AS (
    SELECT 1 AS step_no, 'abort_burst' AS step, b.start_ts AS ts, b.end_ts,
           CASE WHEN b.roles NOT LIKE '%,%' THEN b.roles END AS role, NULL AS ranks, NULL::BIGINT AS bootstrap_room,
           CASE WHEN b.rooms > 0 THEN b.rooms || ' requests (bootstrap rooms) aborted in '
                ELSE b.rids || ' requests (rids) aborted in ' END
               || round((epoch_us(b.end_ts) - epoch_us(b.start_ts)) / 1e6, 3) || ' s ('
               || b.rids || ' rids named across roles ' || b.roles || '; ' || b.n || ' abort records: ' || k.kinds || ')'
               AS detail,
           b.event_id, b.source, b.source_pos
    FROM burst AS b JOIN burst_kinds AS k USING (burst_id)
    UNION ALL
    SELECT 2, 'assertion', a.first_ts, a.last_ts, a.assert_role,
           a.ranks, a.bootstrap_room,
           'assert room in self.transfer_infos for room ' || a.bootstrap_room || ' on ' || a.assert_role || ' '
               || a.ranks || ' (' || a.n || ' records); '
               || CASE WHEN a.aborts_before > 0
                       THEN a.aborts_before || ' aborts of this room before it, the first ' || round(a.first_abort_ms, 1)
                            || ' ms and the last ' || round(a.last_abort_ms, 1) || ' ms earlier'
                       ELSE 'no abort of this room before it' END,
           a.event_id, a.source, a.source_pos
    FROM asserted AS a
    UNION ALL
    SELECT 3, 'last_batch', s.first_rank_stopped_ts, s.stopped_ts, s.role, array_to_string(s.rank_labels, ','), NULL,
           s.role || ' advanced no batch on ' || s.ranks_stopped || ' ranks after ' || strftime(s.stopped_ts, '%H:%M:%S')
               || ' UTC (spread ' || round(s.stop_spread_s, 3) || ' s, ' || coalesce(s.running_req_at_stop, 0)
               || ' requests running); ' || s.other_role
               || CASE WHEN s.other_role_continued
                       THEN ' went on (' || s.other_role_batches || ' batch lines across its ranks, until '
                            || strftime(s.other_role_last_ts, '%H:%M:%S') || ' UTC)'
                       ELSE ' did not advance either' END || '; ' || s.verdict,
           s.event_id, NULL, NULL
    FROM stops AS s
    UNION ALL
    SELECT 4, 'health', s.stopped_ts, coalesce(s.restart_ts, s.resumed_ts), s.role, NULL, NULL,
           CASE WHEN s.health_checks = 0 THEN 'no /health request of ' || s.role || ' logged while it was stopped'
                ELSE '/health of ' || s.role || ' answered ' || s.health_200 || ' times 200 and ' || s.health_not_200
                     || ' times otherwise while it was stopped; ' || s.health_failures || ' health-check failures'
           END,
           hq.event_id, hq.source, hq.source_pos
    FROM stops AS s
    LEFT JOIN LATERAL (
        SELECT q.event_id, q.source, q.source_pos FROM requests AS q
        WHERE q.role = s.role AND q.path LIKE '/health%' AND q.ts > s.stopped_ts
          AND q.ts <= coalesce(s.restart_ts, s.resumed_ts, 'infinity'::TIMESTAMPTZ)
        ORDER BY q.ts, q.event_id LIMIT 1
    ) AS hq ON true
    UNION ALL
    SELECT 5, 'stuck_stacks', k.first_ts, k.last_ts, k.role, k.ranks, NULL,
           k.verdict || ': ' || k.groups || ' (' || concat_ws(', ', nullif(k.n_ranks, 0) || ' rank(s)',
                                                               nullif(k.n_other, 0) || ' process(es) without a rank')
               || ', last captures'
               || CASE WHEN k.untimed > 0 THEN '; ' || k.untimed || ' without a capture time' ELSE '' END || ')',
           NULL, k.source, k.source_pos
    FROM stuck AS k
    UNION ALL
    SELECT 6, 'restart', s.restart_ts, s.restart_ts, s.role, NULL, NULL,
           s.role || ' restart began at ' || strftime(s.restart_ts, '%H:%M:%S')
               || ' UTC (the first record of another process for it: systemd stopping the unit, or the new process), '
               || round(s.until_restart_s, 1) || ' s after the stop',
           s.restart_event_id, NULL, NULL
    FROM restarted AS s
    WHERE s.restart_ts IS NOT NULL
    UNION ALL
    SELECT 7, 'ready', s.ready_ts, s.ready_ts, s.role, NULL, NULL,
           s.role || ' ready again at ' || strftime(s.ready_ts, '%H:%M:%S') || ' UTC'
               || CASE WHEN s.restart_ts IS NOT NULL
                       THEN ', ' || round((epoch_us(s.ready_ts) - epoch_us(s.restart_ts)) / 1e6, 1) || ' s after the restart'
                       ELSE '' END,
           s.ready_event_id, NULL, NULL
    FROM restarted AS s
    WHERE s.ready_ts IS NOT NULL
    UNION ALL
    SELECT 8, 'resumed', s.resumed_ts, s.resumed_ts, s.role, NULL, NULL,
           s.role || ' batches again at ' || strftime(s.resumed_ts, '%H:%M:%S') || ' UTC, '
               || round(s.stalled_s, 1) || ' s after the stop'
               || CASE WHEN s.restart_ts IS NOT NULL
                       THEN ' and ' || round((epoch_us(s.resumed_ts) - epoch_us(s.restart_ts)) / 1e6, 1)
                            || ' s after the restart'
                       ELSE '' END
               || CASE WHEN s.resumed_ts < s.ready_ts
                       THEN ' (before it said ready: the warm-up request SGLang runs at start-up)'
                       ELSE '' END,
           s.resumed_event_id, NULL, NULL
    FROM restarted AS s
    WHERE s.resumed_ts IS NOT NULL
)
SELECT st.step_no, st.step, st.ts, st.end_ts, st.role, st.ranks, st.bootstrap_room, st.detail,
       st.event_id, coalesce(st.source, e.source) AS source, coalesce(st.source_pos, e.source_pos) AS source_pos,
       CASE WHEN st.step = 'stuck_stacks' THEN 'py-spy capture ' || k.capture_id
            ELSE split_part(e.message, chr(10), 1) END AS message
FROM steps AS st
LEFT JOIN events AS e ON e.event_id = st.event_id
LEFT JOIN stuck AS k ON st.step = 'stuck_stacks' AND k.role = st.role
ORDER BY st.ts NULLS LAST, st.step_no, st.role
