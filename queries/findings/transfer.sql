-- question: Which KV transfer and bootstrap failures happened, by backend and cause (abort, timeout, peer
--   dead, routing conflict, the transfer worker's assertion), as storms with counts?
-- tables: transfer_errors
-- columns:
--   ts        the first failure of the group (UTC)
--   end_ts    the last one (UTC)
--   kind      transfer_failures, bootstrap_failures or transfer_assertion (assert room in
--             self.transfer_infos, one row per room); findings.py adds abort_burst from incident_chain
--   role      role of the records (NULL for a burst over several roles)
--   host      host
--   ranks     the ranks that logged them, e.g. [TP0, TP1, TP3]
--   n         failure records in the group
--   summary   the finding in words: count, rooms (named when at most 3), error kind, cause, backend, span
--   evidence  events.event_id of up to 20 records (the first ones)
--   rests_on  the tables behind it
-- parameters: none.
-- reading: one row per (kind, role, host, error kind, cause, backend), an assertion row per room. A cause
--   of other_rank was propagated from the rank that failed first: not the root cause. A cause not named
--   by the line stays "not named".
WITH t AS (
    SELECT *,
           CASE WHEN error_kind = 'assert_transfer_infos' THEN 'transfer_assertion'
                WHEN error_kind ILIKE '%bootstrap%' THEN 'bootstrap_failures' ELSE 'transfer_failures' END AS kind,
           concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS rank_label
    FROM transfer_errors
),
g AS (
    SELECT kind, role, host, error_kind, cause, backend,
           CASE WHEN kind = 'transfer_assertion' THEN bootstrap_room END AS room,
           min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           count(DISTINCT bootstrap_room) AS rooms,
           list_sort(list_distinct(list(bootstrap_room) FILTER (WHERE bootstrap_room IS NOT NULL))) AS room_list,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(event_id ORDER BY ts, event_id)[1:20] AS evidence
    FROM t GROUP BY ALL
)
SELECT ts, end_ts, kind, role, host, ranks, n,
       CASE WHEN kind = 'transfer_assertion' THEN
            'Transfer worker assertion for room ' || room || ': `assert room in self.transfer_infos` on ' || role
            || ' ' || array_to_string(ranks, ', ') || ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC')
            || coalesce(' (' || backend || ')', '')
       ELSE
            n || ' ' || error_kind || ' record(s) on ' || coalesce(role, '?')
            || CASE WHEN len(ranks) > 0 THEN ' ' || array_to_string(ranks, ', ') ELSE '' END
            || coalesce(' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC'), '')
            || ', ' || rooms || ' room(s)'
            || CASE WHEN rooms BETWEEN 1 AND 3 THEN ' (' || array_to_string(room_list, ', ') || ')' ELSE '' END
            || '; cause ' || coalesce(cause, 'not named') || CASE WHEN cause = 'other_rank' THEN ' (propagated: not the root cause)' ELSE '' END
            || '; backend ' || coalesce(backend, 'not named')
       END AS summary,
       evidence, 'transfer_errors (error_kind, cause, backend)' AS rests_on
FROM g
ORDER BY ts NULLS LAST
