-- question: Which engines' ranks diverged: the TP ranks of one group wait in different places in the
--   py-spy round taken during the incident, or SGLang's rank-consensus check found their events differ?
-- tables: desync, watchdogs
-- columns:
--   ts        the first capture of the round (UTC; NULL for captures without time)
--   end_ts    the last capture of the round (UTC)
--   kind      rank_divergence
--   role      the engine
--   host      its host
--   ranks     the ranks captured in the round
--   n         ranks captured
--   summary   the groups in words, e.g. "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3", or the
--             ranks by the hash each logged
--   evidence  events.event_id of the captures (empty for bare py-spy files, which are no record of a log)
--             or of the rank-consensus lines
--   rests_on  the query behind it and the round's basis
-- parameters: none.
-- reading: one row per (role, host, PP stage) whose desync verdict is divergent; one per (role, host) whose
--   ranks logged "Found rank divergence" (rule "rank consensus", sglang#34406: the first signal that
--   dates the divergence itself, before any hang; the ranks then exit).
WITH consensus AS (
    SELECT *, regexp_extract(reason, 'local hash: ([0-9a-f]+)', 1) AS hash,
           regexp_extract(reason, '^(\d+) event', 1) AS n_events,
           concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS rank_label
    FROM watchdogs WHERE watchdog_kind = 'rank_divergence'
),
by_hash AS (
    SELECT role, host, hash, min(ts) AS ts, max(ts) AS end_ts, any_value(n_events) AS n_events,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(event_id ORDER BY ts, event_id) AS evidence, count(*) AS n
    FROM consensus GROUP BY ALL
)
SELECT min(ts) AS ts, max(end_ts) AS end_ts, 'rank_divergence' AS kind, role, host,
       list_sort(flatten(list(ranks))) AS ranks, sum(n)::BIGINT AS n,
       'Rank divergence found by SGLang''s rank-consensus check'
       || coalesce(' on ' || nullif(role, 'unknown'), '')
       || coalesce(' at ' || strftime(min(ts), '%Y-%m-%d %H:%M:%S UTC'), ' (no time read)')
       || ': ' || any_value(n_events) || ' event(s) hashed differently: '
       || string_agg(coalesce(nullif(array_to_string(ranks, ','), ''), 'rank not printed') || ' hash ' || left(hash, 12) || '…',
                     ' | ' ORDER BY ranks)
       || CASE WHEN count(*) = 1 THEN ' (only one hash in the data: the other ranks'' lines are not here)' ELSE '' END
       AS summary,
       flatten(list(evidence)) AS evidence,
       'watchdogs (rank_divergence: the rank-consensus lines)' AS rests_on
FROM by_hash GROUP BY role, host
UNION ALL BY NAME
SELECT min(round_ts) AS ts, max(round_end_ts) AS end_ts, 'rank_divergence' AS kind, role, host,
       list_sort(list_distinct(list(rank_label) FILTER (WHERE is_rank))) AS ranks,
       count(*) FILTER (WHERE is_rank)::BIGINT AS n,
       'TP desync in ' || coalesce(role, 'an engine of unknown role') || coalesce(' PP' || pp_rank, '')
       || ': its ranks wait in different places: ' || any_value(groups)
       || coalesce(' (py-spy round of ' || strftime(min(round_ts), '%Y-%m-%d %H:%M:%S UTC') || ')', ' (captures without time)') AS summary,
       CAST([] AS BIGINT[]) AS evidence,
       'desync (py-spy captures: ' || coalesce(any_value(round_basis), 'round') || ')' AS rests_on
FROM desync WHERE verdict = 'divergent'
GROUP BY role, host, pp_rank
ORDER BY ts NULLS LAST
