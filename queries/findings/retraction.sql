-- question: Where did decode run out of KV cache, so that the scheduler retracted running requests
--   (SGLang's "Decode out of memory happened." / "KV cache pool is full. Retract requests.")?
-- tables: retractions, batches
-- columns:
--   ts        the first retraction record of the group (UTC)
--   end_ts    the last one (UTC)
--   kind      decode_retraction
--   role      role of the records
--   host      host
--   ranks     the ranks that printed it, e.g. [TP0, TP2]
--   n         retraction records (one per TP rank that printed a retraction)
--   summary   the finding in words: retractions, requests retracted, new_token_ratio before → after, the
--             ranks, when, and the last decode batch's token usage before it
--   evidence  events.event_id of every retraction record
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per (role, host). Every TP rank of a scheduler group runs the same scheduler and
--   prints the same retraction: records of one DP rank at one instant with the same numbers are one
--   retraction (its requests counted once); different DP ranks are different schedulers. The token usage
--   is that of the last decode batch line of the same role and host at or before the first retraction.
WITH r AS (
    SELECT r.*,
           concat_ws(' ', 'DP' || r.dp_rank, 'PP' || r.pp_rank, 'TP' || r.tp_rank, 'EP' || r.ep_rank) AS rank_label
    FROM retractions r
),
one AS (  -- a retraction, once: the TP ranks of a group mirror it
    SELECT DISTINCT role, host, dp_rank, pp_rank, ts, retracted_reqs, new_token_ratio_before, new_token_ratio_after
    FROM r
),
counted AS (
    SELECT role, host, count(*)::BIGINT AS retractions, sum(retracted_reqs)::BIGINT AS requests,
           arg_min(new_token_ratio_before, coalesce(ts, TIMESTAMPTZ '9999-01-01')) AS ratio_before,
           arg_max(new_token_ratio_after, coalesce(ts, TIMESTAMPTZ '0001-01-01')) AS ratio_after
    FROM one GROUP BY ALL
),
g AS (
    SELECT role, host, min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(event_id ORDER BY ts NULLS LAST, event_id) AS evidence
    FROM r GROUP BY ALL
),
usage AS (  -- the last decode batch line before the first retraction, same role and host
    SELECT g.role, g.host, arg_max(b.token_usage, b.ts) AS token_usage, arg_max(b.token, b.ts) AS token
    FROM g JOIN batches b
      ON b.role IS NOT DISTINCT FROM g.role AND b.host IS NOT DISTINCT FROM g.host
     AND b.batch_type = 'decode' AND b.ts <= g.ts
    GROUP BY ALL
)
SELECT g.ts, g.end_ts, 'decode_retraction' AS kind, g.role, g.host, g.ranks, g.n,
       'Decode ran out of KV cache memory: ' || c.retractions || ' retraction(s), ' || c.requests
       || ' request(s) taken out of the running batch and put back in the waiting queue (new_token_ratio '
       || printf('%.4f', c.ratio_before) || ' → ' || printf('%.4f', c.ratio_after) || ')'
       -- an unknown role is left out, never worded
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(g.role, 'unknown'), nullif(array_to_string(g.ranks, ', '), '')), ''), '')
       || coalesce(CASE WHEN date_trunc('second', g.end_ts) > date_trunc('second', g.ts)
                        THEN ' from ' || strftime(g.ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(g.end_ts, '%H:%M:%S UTC')
                        ELSE ' at ' || strftime(g.ts, '%Y-%m-%d %H:%M:%S UTC') END, ' (no time read)')
       || CASE WHEN g.n > c.retractions THEN '; ' || g.n || ' record(s): each rank of the group prints the same retraction' ELSE '' END
       || coalesce('; the last decode batch before it: token usage ' || printf('%.2f', u.token_usage)
                   || coalesce(', #token ' || u.token, ''), '') AS summary,
       g.evidence,
       'retractions (one retraction per instant and DP rank, printed by each TP rank; the last decode batch before it)' AS rests_on
FROM g JOIN counted c ON c.role IS NOT DISTINCT FROM g.role AND c.host IS NOT DISTINCT FROM g.host
LEFT JOIN usage u ON u.role IS NOT DISTINCT FROM g.role AND u.host IS NOT DISTINCT FROM g.host
ORDER BY g.ts NULLS LAST
