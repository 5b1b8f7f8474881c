-- question: Is each engine's TP group in lockstep or desynchronised: where does each rank wait in its
--   last py-spy capture, and which ranks wait in the same place? (stuck_ranks, with the role and host
--   of a capture taken from a bare py-spy file filled in from the pid, one row per rank)
-- tables: stuck_ranks, processes, captures
-- columns:
--   role           prefill or decode (from the capture, else from the records its pid logged)
--   host           host (likewise)
--   pp_rank        pipeline rank: one TP group per (role, pp_rank)
--   tp_rank        TP rank
--   rank_label     e.g. "TP2" or "DP1 TP1 EP1"
--   pid            the scheduler process
--   capture_id     the capture used: the last timed one, else the last untimed one
--   capture_ts     when it was taken (UTC; NULL for a bare py-spy file)
--   wait_class     where the main thread waits: all_reduce, broadcast, barrier, recv, running …
--   backend        nccl, gloo … where the frames show it
--   event_loop     the SGLang event loop on the stack
--   wait_label     wait_class(backend), e.g. "broadcast(gloo)"
--   no_progress    stuck_ranks.no_progress: the stack did not change between the last two captures;
--                  null when the rank has one capture (nothing to compare)
--   verdict        per TP group: lockstep (every rank waits in the same wait_label) or divergent
--   groups         per TP group: "label: ranks | label: ranks", e.g. "broadcast(gloo): TP0,TP1 |
--                  all_reduce(nccl): TP2,TP3"
--   source         file or journal of the capture
--   source_pos     its position
-- parameters: none.
-- reading: divergent = a TP desync: the ranks of one group wait in different collectives and none
--   can complete. stuck_ranks keys a capture without role by its pid, so the same rank can appear
--   twice there (a watchdog dump in the journal and a hand dump in a file); here the pid gives the
--   role and one capture per rank is kept. Empty: no py-spy capture.
WITH pid_role AS (
    -- the role and host each pid logged with, from the per-process summary ingest writes
    SELECT pid, any_value(role) AS role, any_value(host) AS host FROM processes
    WHERE role IN ('prefill', 'decode') AND pid IS NOT NULL AND pid > 1
    GROUP BY pid HAVING count(DISTINCT role) = 1 AND count(DISTINCT host) <= 1
),
resolved AS (
    SELECT s.* REPLACE (coalesce(s.role, p.role) AS role, coalesce(s.host, p.host) AS host),
           coalesce(s.wait_class, 'unknown') || CASE WHEN s.backend IS NOT NULL THEN '(' || s.backend || ')' ELSE '' END
               AS wait_label
    FROM stuck_ranks AS s LEFT JOIN pid_role AS p ON p.pid = s.pid
),
per_rank AS (
    SELECT *, concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS label
    FROM resolved
    QUALIFY row_number() OVER (
        PARTITION BY role, host, dp_rank, pp_rank, tp_rank, ep_rank, CASE WHEN tp_rank IS NULL THEN pid END
        ORDER BY capture_ts DESC NULLS LAST, capture_id DESC) = 1
),
group_text AS (
    SELECT role, pp_rank, wait_label, min(tp_rank) AS first_tp,
           wait_label || ': ' || string_agg(label, ',' ORDER BY dp_rank, tp_rank, ep_rank, host) AS g
    FROM per_rank GROUP BY role, pp_rank, wait_label
),
verdicts AS (
    SELECT role, pp_rank,
           CASE WHEN count(*) = 1 THEN 'lockstep' ELSE 'divergent' END AS verdict,
           string_agg(g, ' | ' ORDER BY first_tp, wait_label) AS groups
    FROM group_text GROUP BY role, pp_rank
)
SELECT r.role, r.host, r.pp_rank, r.tp_rank, r.label AS rank_label, r.pid, r.capture_id, r.capture_ts,
       r.wait_class, r.backend, r.event_loop, r.wait_label,
       CASE WHEN r.n_captures > 1 THEN r.no_progress END AS no_progress, v.verdict, v.groups,
       c.source, c.source_pos
FROM per_rank AS r
LEFT JOIN verdicts AS v ON v.role IS NOT DISTINCT FROM r.role AND v.pp_rank IS NOT DISTINCT FROM r.pp_rank
LEFT JOIN (SELECT capture_id, any_value(source) AS source, any_value(source_pos) AS source_pos
           FROM captures GROUP BY capture_id) AS c ON c.capture_id = r.capture_id
ORDER BY r.role = 'decode', r.role, r.pp_rank, r.host, r.dp_rank, r.tp_rank, r.ep_rank
