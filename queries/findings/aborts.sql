-- question: Which requests were aborted outside an abort burst (a client that disconnected, an AbortReq
--   propagated to a KV transfer), on which role and ranks, with which rid and room?
-- tables: aborts, events (the request_id another engine's abort line names: vLLM's, Dynamo's)
-- columns:
--   ts        the first abort of the group (UTC; NULL when the lines print no time)
--   end_ts    the last one (UTC)
--   kind      request_aborts
--   role      role of the records
--   host      host
--   ranks     the ranks that logged them, e.g. [TP0]
--   n         requests aborted (distinct rid, else room, else another engine's request_id)
--   summary   the finding in words: count, role, ranks, time, the rids, rooms and request ids (at most 3), the
--             reason and abort kind as printed
--   evidence  events.event_id of every record it counts
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per (role, host, abort kind) (rule "lone abort"). findings.py keeps a row only when
--   no abort burst (incident_chain's, the one truth of a burst) overlaps it: a burst's aborts are said
--   once, by the burst. Aborts of different roles or rooms stay apart: nothing here joins them.
WITH a AS (
    SELECT ab.*, e.request_id,
           concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS rank_label,
           concat_ws(', ', 'rid ' || ab.rid, 'room ' || ab.bootstrap_room, 'request ' || e.request_id) AS names
    FROM aborts ab
    LEFT JOIN (SELECT event_id, request_id FROM records
               WHERE request_id IS NOT NULL AND event_id IN (SELECT event_id FROM aborts)) e USING (event_id)
),
g AS (
    SELECT role, host, abort_kind, min(ts) AS ts, max(ts) AS end_ts,
           count(DISTINCT coalesce(rid, CAST(bootstrap_room AS VARCHAR), request_id))::BIGINT AS n,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list_sort(list_distinct(list(names) FILTER (WHERE names <> ''))) AS names,
           string_agg(DISTINCT reason, '; ' ORDER BY reason) AS reasons,
           list(event_id ORDER BY ts, event_id) AS evidence
    FROM a GROUP BY ALL
)
SELECT ts, end_ts, 'request_aborts' AS kind, role, host, ranks, n,
       n || ' request(s) aborted'  -- an unknown role is left out, never worded
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(role, 'unknown'), nullif(array_to_string(ranks, ', '), '')), ''), '')
       || CASE WHEN ts IS NULL THEN ' (no time read)'
               WHEN ts = end_ts THEN ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC')
               ELSE ' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC') END
       || CASE WHEN len(names) BETWEEN 1 AND 3 THEN ': ' || array_to_string(names, '; ') ELSE '' END
       || '; reason ' || coalesce(reasons, 'not printed') || coalesce(' (' || abort_kind || ')', '') AS summary,
       evidence, 'aborts (no abort burst over them)' AS rests_on
FROM g
ORDER BY ts NULLS LAST
