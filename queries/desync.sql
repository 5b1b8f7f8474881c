-- question: Is each engine's TP group in lockstep or desynchronised in one round of py-spy captures:
--   where does each rank wait, and which ranks wait in the same place? (stuck_ranks, one round per
--   engine, with the role and host of a capture taken from a bare py-spy file filled in from the pid)
-- tables: stuck_ranks, processes, captures, wedge
-- columns:
--   role           prefill or decode (from the capture, else from the records its pid logged)
--   host           host (likewise)
--   pp_rank        pipeline rank: one TP group per (role, pp_rank)
--   tp_rank        TP rank
--   rank_label     e.g. "TP2" or "DP1 TP1 EP1"; "pid 3307" for a process without rank
--   is_rank        false for a process without rank (launcher, tokenizer …): shown, not counted
--   pid            the scheduler process
--   capture_id     the capture used: the rank's last one in the round
--   capture_ts     when it was taken (UTC; NULL for a bare py-spy file)
--   round_ts       first capture of the round the verdict rests on (UTC; NULL: captures without time)
--   round_end_ts   last capture of that round (UTC)
--   round_basis    why this round: "during the stop of ROLE at HH:MM:SS (wedged)": the engine's last
--                  round that began while wedge shows a role stopped (until its restart or next
--                  batch; a wedged stop before a stalled one, a restart, an idle gap; its own engine's
--                  stop first); else "latest round"; "captures without time" when it has no timed one
--   rounds         timed rounds of py-spy captures of this role in the data (stuck_ranks.round_no)
--   wait_class     where the main thread waits: all_reduce, broadcast, barrier, recv, running …
--   backend        nccl, gloo … where the frames show it
--   event_loop     the SGLang event loop on the stack
--   wait_label     the group: the wait, named with its backend when any stack of the group shows it,
--                  e.g. "broadcast(gloo)"
--   no_progress    stuck_ranks.no_progress: the stack did not change between the last two captures;
--                  null when the rank has one capture (nothing to compare)
--   ranks_in_group ranks (is_rank) of this TP group captured in the round
--   verdict        per TP group: lockstep (two or more ranks, all in the same wait_label), divergent,
--                  "cannot tell: one rank captured" or "cannot tell: no rank captured"
--   groups         per TP group: "label: ranks | label: ranks", e.g. "broadcast(gloo): TP0,TP1 |
--                  all_reduce(nccl): TP2,TP3"
--   source         file or journal of the capture
--   source_pos     its position
-- parameters: none of its own (stuck_ranks' round_gap_s and max_gap_s, wedge's apply).
-- reading: one round per engine, so captures of one moment are compared: the dumps taken while an
--   engine was stopped (the incident) rather than routine dumps of the restarted processes hours
--   later. divergent = a TP desync: the ranks of one group wait in different collectives and none
--   can complete. A verdict needs two ranks of a group in the round; one rank, or only a launcher
--   process, cannot tell. stuck_ranks keys a capture without role by its pid, so the same rank can
--   appear twice there (a watchdog dump in the journal and a hand dump in a file); here the pid gives
--   the role and one capture per rank is kept. Empty: no py-spy capture.
WITH pid_role AS (
    -- the role and host each pid logged with, from the per-process summary ingest writes
    SELECT pid, any_value(role) AS role, any_value(host) AS host FROM processes
    WHERE role IN ('prefill', 'decode') AND pid IS NOT NULL AND pid > 1
    GROUP BY pid HAVING count(DISTINCT role) = 1 AND count(DISTINCT host) <= 1
),
resolved AS (
    SELECT s.* REPLACE (coalesce(s.role, p.role) AS role, coalesce(s.host, p.host) AS host)
    FROM stuck_ranks AS s LEFT JOIN pid_role AS p ON p.pid = s.pid
),
stop_windows AS (
    -- while a role stood still: from its stop to its restart or next batch (else the end of the data)
    SELECT role AS stop_role, stopped_ts, split_part(verdict, ':', 1) AS stop_kind,
           CASE WHEN verdict LIKE 'wedged%' THEN 0 WHEN verdict LIKE 'stalled%' THEN 1
                WHEN verdict LIKE 'restarted%' THEN 2 ELSE 3 END AS stop_prio,
           least(coalesce(restart_ts, 'infinity'::TIMESTAMPTZ), coalesce(resumed_ts, 'infinity'::TIMESTAMPTZ))
               AS until_ts
    FROM wedge WHERE stopped_ts IS NOT NULL
),
role_rounds AS (
    SELECT DISTINCT role, round_no, round_ts, round_end_ts FROM resolved
),
round_stop AS (
    -- the stop each timed round fell in, if any: a wedge before a stall before a restart before an
    -- idle gap, the round's own engine first, then the latest stop
    SELECT r.*, w.stop_role, w.stopped_ts, w.stop_kind, coalesce(w.stop_prio, 9) AS stop_prio,
           w.stopped_ts IS NOT NULL AS in_stop
    FROM role_rounds AS r
    LEFT JOIN stop_windows AS w ON r.round_ts >= w.stopped_ts AND r.round_ts < w.until_ts
    QUALIFY row_number() OVER (PARTITION BY r.role, r.round_no, r.round_ts
                               ORDER BY w.stop_prio NULLS LAST, w.stop_role IS NOT DISTINCT FROM r.role DESC,
                                        w.stopped_ts DESC NULLS LAST) = 1
),
chosen AS (
    -- per engine: its last round during the strongest stop; else its latest round; else its untimed
    -- captures
    SELECT role,
           arg_max(round_ts, (in_stop, -stop_prio, round_ts IS NOT NULL, round_ts)) AS round_ts,
           arg_max(round_end_ts, (in_stop, -stop_prio, round_ts IS NOT NULL, round_ts)) AS round_end_ts,
           arg_max(CASE WHEN in_stop THEN 'during the stop of ' || stop_role || ' at '
                                          || strftime(stopped_ts, '%H:%M:%S') || ' (' || stop_kind || ')'
                        WHEN round_ts IS NOT NULL THEN 'latest round'
                        ELSE 'captures without time' END,
                   (in_stop, -stop_prio, round_ts IS NOT NULL, round_ts)) AS round_basis
    FROM round_stop
    GROUP BY role
),
in_round AS (
    -- the rows of the chosen round; a capture without role joins its engine's round by time
    SELECT s.*, c.round_basis, c.round_ts AS chosen_ts, c.round_end_ts AS chosen_end_ts
    FROM resolved AS s JOIN chosen AS c ON s.role IS NOT DISTINCT FROM c.role
    WHERE CASE WHEN c.round_ts IS NULL THEN s.capture_ts IS NULL
               ELSE s.capture_ts BETWEEN c.round_ts AND c.round_end_ts END
),
per_rank AS (
    SELECT *,
           CASE WHEN is_rank THEN concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank)
                ELSE coalesce('pid ' || CAST(pid AS VARCHAR), 'thread ' || thread_id) END AS label
    FROM in_round
    QUALIFY row_number() OVER (
        PARTITION BY role, host, dp_rank, pp_rank, tp_rank, ep_rank,
                     CASE WHEN tp_rank IS NULL THEN coalesce(CAST(pid AS VARCHAR), capture_id) END
        ORDER BY capture_ts DESC NULLS LAST, capture_id DESC) = 1
),
labelled AS (
    SELECT * REPLACE (
        coalesce(wait_class, 'unknown')
            || coalesce('(' || CASE WHEN count(DISTINCT backend) OVER same_wait = 1
                                    THEN max(backend) OVER same_wait ELSE backend END || ')', '') AS wait_label),
        count(*) FILTER (WHERE is_rank) OVER (PARTITION BY role, pp_rank) AS n_ranks
    FROM per_rank
    WINDOW same_wait AS (PARTITION BY role, pp_rank, coalesce(wait_class, 'unknown'))
),
group_text AS (
    SELECT role, pp_rank, wait_label, min(tp_rank) AS first_tp, bool_or(is_rank) AS has_rank,
           wait_label || ': ' || string_agg(label, ',' ORDER BY dp_rank, tp_rank, ep_rank, host, pid, thread_id) AS g
    FROM labelled WHERE is_rank OR n_ranks = 0 GROUP BY role, pp_rank, wait_label
),
verdicts AS (
    SELECT role, pp_rank, any_value(n_ranks) AS n_ranks,
           CASE WHEN any_value(n_ranks) = 0 THEN 'cannot tell: no rank captured'
                WHEN any_value(n_ranks) = 1 THEN 'cannot tell: one rank captured'
                WHEN count(*) = 1 THEN 'lockstep' ELSE 'divergent' END AS verdict,
           string_agg(g, ' | ' ORDER BY first_tp NULLS LAST, wait_label) AS groups
    FROM (SELECT g.*, l.n_ranks FROM group_text AS g
          JOIN (SELECT DISTINCT role, pp_rank, n_ranks FROM labelled) AS l
            ON l.role IS NOT DISTINCT FROM g.role AND l.pp_rank IS NOT DISTINCT FROM g.pp_rank)
    GROUP BY role, pp_rank
)
SELECT r.role, r.host, r.pp_rank, r.tp_rank, r.label AS rank_label, r.is_rank, r.pid, r.capture_id, r.capture_ts,
       r.chosen_ts AS round_ts, r.chosen_end_ts AS round_end_ts, r.round_basis, r.rounds,
       r.wait_class, r.backend, r.event_loop, r.wait_label,
       CASE WHEN r.n_captures > 1 THEN r.no_progress END AS no_progress, v.n_ranks AS ranks_in_group,
       v.verdict, v.groups, c.source, c.source_pos
FROM labelled AS r
LEFT JOIN verdicts AS v ON v.role IS NOT DISTINCT FROM r.role AND v.pp_rank IS NOT DISTINCT FROM r.pp_rank
LEFT JOIN (SELECT capture_id, any_value(source) AS source, any_value(source_pos) AS source_pos
           FROM captures GROUP BY capture_id) AS c ON c.capture_id = r.capture_id
ORDER BY r.role = 'decode', r.role, r.pp_rank, r.host, r.dp_rank, r.tp_rank, r.ep_rank, r.pid, r.rank_label, r.capture_id
