-- question: Which engines' ranks diverged: the TP ranks of one group wait in different places in the
--   py-spy round taken during the incident?
-- tables: desync
-- columns:
--   ts        the first capture of the round (UTC; NULL for captures without time)
--   end_ts    the last capture of the round (UTC)
--   kind      rank_divergence
--   role      the engine
--   host      its host
--   ranks     the ranks captured in the round
--   n         ranks captured
--   summary   the groups in words, e.g. "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3"
--   evidence  events.event_id of the captures (empty for bare py-spy files, which are no record of a log)
--   rests_on  the query behind it and the round's basis
-- parameters: none.
-- reading: one row per (role, host, PP stage) whose desync verdict is divergent.
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
