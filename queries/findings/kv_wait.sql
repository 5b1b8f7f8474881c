-- question: Which requests did a KV consumer (the decode side) keep waiting for KV cache that the
--   producer (prefill) never delivered, as its scheduler reported them (vLLM's "<id> is still in
--   WAITING_FOR_REMOTE_KVS state.")?
-- tables: events
-- columns:
--   ts        the first report (UTC; NULL when the lines print no year)
--   end_ts    the last one (UTC)
--   kind      remote_kv_wait
--   role      role of the records
--   host      host
--   ranks     the ranks that logged them, e.g. [TP0]
--   n         reports
--   summary   the finding in words: how many requests, how often reported, from when to when, the ids
--             (when at most 3)
--   evidence  events.event_id of every report
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per (role, host). A request in WAITING_FOR_REMOTE_KVS has its prefill done elsewhere and
--   waits for the KV transfer; reported again and again it is a stall of the transfer, though no line says
--   failed. The id is the record's request_id (vLLM's), else the word before "is still in".
WITH w AS (
    SELECT e.*,
           coalesce(e.request_id, e.rid,
                    nullif(regexp_extract(e.message, '(\S+) is still in WAITING_FOR_REMOTE_KVS', 1), '')) AS req,
           concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank) AS rank_label
    FROM records e
    WHERE e.message LIKE '%WAITING_FOR_REMOTE_KVS%'
      AND regexp_matches(e.message, 'still in WAITING_FOR_REMOTE_KVS')
),
g AS (
    SELECT role, host, min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           count(DISTINCT req)::BIGINT AS requests,
           list_sort(list_distinct(list(req) FILTER (WHERE req IS NOT NULL))) AS ids,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(event_id ORDER BY ts NULLS LAST, event_id) AS evidence
    FROM w GROUP BY ALL
)
SELECT ts, end_ts, 'remote_kv_wait' AS kind, role, host, ranks, n,
       requests || ' request(s) kept waiting for their KV cache from the remote (prefill) side'
       -- an unknown role is left out, never worded
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(role, 'unknown'), nullif(array_to_string(ranks, ', '), '')), ''), '')
       || CASE WHEN len(ids) BETWEEN 1 AND 3 THEN ': ' || array_to_string(ids, ', ') ELSE '' END
       || '; reported ' || n || ' time(s) in WAITING_FOR_REMOTE_KVS'
       || CASE WHEN ts IS NULL THEN ' (no time read)'
               WHEN end_ts > ts THEN ' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC')
               ELSE ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') END
       || '; no line says the transfer failed' AS summary,
       evidence, 'events (a KV consumer''s request still in WAITING_FOR_REMOTE_KVS)' AS rests_on
FROM g
ORDER BY ts NULLS LAST
