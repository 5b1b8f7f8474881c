-- question: Which start-up step did SGLang's ranks begin and never end while they went on printing (a
--   start-up that stalled: `Init torch distributed begin.` and no `… ends.`, though a rank printed later)?
-- tables: events
-- columns:
--   ts        the first rank's `<step> begin.` record (UTC)
--   end_ts    the last timed record after it of a rank that began it (UTC)
--   kind      start_up_stall
--   role      role of the records
--   host      host
--   ranks     the ranks that began the step, e.g. [TP0 EP0, TP1 EP1]
--   n         ranks that began the step
--   summary   the finding in words: the step, the ranks, when they began it, that none ended it, and the
--             later record of one of them that shows it went on
--   evidence  events.event_id of the begin records, then of the last later record
--   rests_on  the rule behind it
-- parameters: none.
-- reading: SGLang logs its start-up steps in pairs, `<Step> begin.` and `<Step> end.` / `<Step> ends. …`
--   (model_runner.py: Init torch distributed, Load weight). One row per (source, host, step) whose begin
--   records have no end record of the same step in that input, where a rank that began it prints a timed
--   record after the last begin: the rank went on printing, the step did not end. A step whose ranks print
--   nothing after it is left out (the excerpt may only end there), and so are ranks the lines do not print.
WITH b AS (
    SELECT e.*, regexp_extract(e.message, '^\[[^\]\n]+\] ([A-Z][A-Za-z ]*?) begin\.?\s*$', 1) AS step,
           concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank) AS rank_label
    FROM records e
    WHERE e.message LIKE '% begin%' AND regexp_matches(e.message, '^\[[^\]\n]+\] [A-Z][A-Za-z ]*? begin\.?\s*$')
),
steps AS (
    SELECT source, host, step, any_value(role) AS role, min(ts) AS ts, max(ts) AS last_begin,
           count(DISTINCT rank_label)::BIGINT AS n,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           list(event_id ORDER BY ts, event_id) AS begins
    FROM b WHERE step <> '' GROUP BY ALL
),
open AS (  -- no record of the input ends the step
    SELECT s.* FROM steps s
    WHERE NOT EXISTS (SELECT 1 FROM records e
                      WHERE e.source = s.source AND e.host IS NOT DISTINCT FROM s.host
                        AND regexp_matches(e.message, '^\[[^\]\n]+\] ' || s.step || ' ends?\b'))
),
later AS (  -- the last timed record, after the last begin, of a rank that began the step
    SELECT o.source, o.host, o.step, arg_max(e.event_id, e.ts) AS later_id, max(e.ts) AS later_ts,
           arg_max(concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank), e.ts) AS later_rank
    FROM open o JOIN events e ON e.source = o.source AND e.host IS NOT DISTINCT FROM o.host AND e.ts > o.last_begin
    WHERE list_contains(o.ranks, concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank))
    GROUP BY ALL
)
SELECT o.ts, l.later_ts AS end_ts, 'start_up_stall' AS kind, o.role, o.host, o.ranks, o.n,
       -- what was read, never more: its end may be past the excerpt, and the lines a rank printed on with may be
       -- the step's own (sglang#7478, batch24/04: TP0's `Found nccl …` and NCCL's bootstrap inside "Init torch
       -- distributed", then the paste ends)
       'Start-up not seen past "' || o.step || '"'
       -- an unknown role is left out, never worded
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(o.role, 'unknown'), nullif(array_to_string(o.ranks, ', '), '')), ''), '')
       || ': ' || o.n || ' rank(s) began it at ' || strftime(o.ts, '%Y-%m-%d %H:%M:%S UTC')
       || CASE WHEN date_trunc('second', o.last_begin) > date_trunc('second', o.ts)
               THEN ' to ' || strftime(o.last_begin, '%H:%M:%S UTC') ELSE '' END
       || ', none printed its end in the data read, and ' || l.later_rank || ' printed on at ' || strftime(l.later_ts, '%H:%M:%S UTC')
       || ' (' || round(epoch(l.later_ts) - epoch(o.last_begin))::BIGINT || ' s after the last begin)' AS summary,
       list_append(o.begins, l.later_id) AS evidence,
       'events: SGLang''s `<step> begin.` without its `<step> end(s)` while a later record of the input is timed' AS rests_on
FROM open o JOIN later l ON l.source = o.source AND l.host IS NOT DISTINCT FROM o.host AND l.step = o.step
ORDER BY ts
