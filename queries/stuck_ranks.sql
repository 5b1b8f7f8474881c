-- Question: in the last py-spy capture of each rank, what is its main thread waiting in (collective,
--   backend, SGLang event loop), do the ranks of one engine agree ("lockstep") or split ("divergent",
--   naming the groups), and did the stack stop changing between the last two captures of that process
--   ("no_progress")?
-- Tables: captures (one row per py-spy capture x thread, written by parsers/pyspy.py with wait_class,
--   backend, event_loop, fingerprint ...). The stacks table is not read: join stacks ON (capture_id,
--   thread_id) to see the frames of any row.
-- Columns: host, role, dp_rank, pp_rank, tp_rank, ep_rank, rank_label ("TP2", "DP1_PP0_TP1_EP1"),
--   pid, capture_id, capture_ts, n_captures (main-thread captures of this rank), thread_id,
--   wait_class, backend, event_loop, wait_frame, innermost, fingerprint, fingerprint_group,
--   no_progress, progress_gap_s, verdict, groups.
-- Parameters:
--   max_gap_s   two captures of one pid at most this many seconds apart with the same fingerprint are
--               no_progress (DOUBLE; default 600, as parsers.pyspy.stuck_ranks)
-- How to read: one row per rank (host, role, dp, pp, tp, ep; plus pid when a process shows no ranks
--   or has no role, then rank_label reads "TP0@3307" or "pid3307").
--   The main thread is the one whose thread_id equals the pid, or named MainThread. The last capture
--   is the latest by capture_ts, then source, source_pos (as a number when it is one), capture_seq.
--   verdict is per (role, pp_rank): "lockstep" when every rank waits in the same class(backend),
--   "divergent" otherwise; groups lists "class(backend): ranks" joined by " | ", e.g.
--   "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3" = a TP desync. fingerprint_group gets a
--   "#k" suffix when ranks share a class but not the exact stack. no_progress is true when the previous
--   capture of the same pid had the same fingerprint and was 0 < gap <= max_gap_s earlier, null when
--   the gap is unknown. role must be set (ingest fills it from the unit) or engines mix.
WITH params AS (
    SELECT coalesce(getvariable('max_gap_s')::DOUBLE, 600.0) AS max_gap_s
),
main AS (
    SELECT *, TRY_CAST(source_pos AS BIGINT) AS pos_num
    FROM captures
    WHERE coalesce(is_main, coalesce(thread_id = pid, false) OR thread_name = 'MainThread')
    QUALIFY row_number() OVER (PARTITION BY capture_id, thread_id ORDER BY capture_seq) = 1
),
ordered AS (
    SELECT *,
        CASE WHEN (dp_rank IS NULL AND pp_rank IS NULL AND tp_rank IS NULL AND ep_rank IS NULL) OR role IS NULL
             THEN pid END AS key_pid,
        row_number() OVER (ORDER BY capture_ts NULLS FIRST, source NULLS FIRST, pos_num NULLS FIRST,
                           source_pos NULLS FIRST, capture_seq NULLS FIRST, capture_id NULLS FIRST) AS ord
    FROM main
),
with_prev AS (
    SELECT *,
        CASE WHEN pid IS NOT NULL THEN lag(capture_id) OVER same_pid END AS prev_capture_id,
        CASE WHEN pid IS NOT NULL THEN lag(fingerprint) OVER same_pid END AS prev_fingerprint,
        CASE WHEN pid IS NOT NULL THEN lag(capture_ts) OVER same_pid END AS prev_ts
    FROM ordered
    WINDOW same_pid AS (PARTITION BY host, pid ORDER BY ord)
),
last AS (
    SELECT *,
        count(*) OVER rank_key AS n_captures,
        CASE WHEN prev_capture_id IS NOT NULL
             THEN (epoch_us(capture_ts) - epoch_us(prev_ts)) / 1e6 END AS progress_gap_s
    FROM with_prev
    WINDOW rank_key AS (PARTITION BY host, role, dp_rank, pp_rank, tp_rank, ep_rank, key_pid)
    QUALIFY row_number() OVER (PARTITION BY host, role, dp_rank, pp_rank, tp_rank, ep_rank, key_pid
                               ORDER BY ord DESC) = 1
),
labelled AS (
    SELECT *,
        CASE WHEN prev_capture_id IS NULL OR prev_fingerprint IS DISTINCT FROM fingerprint THEN false
             WHEN progress_gap_s IS NULL OR progress_gap_s <= 0 THEN NULL
             WHEN progress_gap_s <= (SELECT max_gap_s FROM params) THEN true
             ELSE false END AS no_progress,
        coalesce(wait_class, 'unknown') || CASE WHEN backend IS NOT NULL THEN '(' || backend || ')' ELSE '' END
            AS label,
        coalesce(nullif(concat_ws('_', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank), '')
                     || CASE WHEN role IS NULL THEN '@' || coalesce(CAST(pid AS VARCHAR), '?') ELSE '' END,
                 'pid' || coalesce(CAST(pid AS VARCHAR), '?')) AS rank_label,
        row_number() OVER (PARTITION BY role, pp_rank
                           ORDER BY dp_rank NULLS LAST, tp_rank NULLS LAST, ep_rank NULLS LAST, host NULLS LAST,
                                    pid NULLS LAST, capture_id NULLS LAST) AS rn
    FROM last
),
fp AS (
    SELECT *, min(rn) OVER (PARTITION BY role, pp_rank, fingerprint) AS fp_first
    FROM labelled
),
grouped AS (
    SELECT *,
        CASE WHEN count(DISTINCT fingerprint) OVER (PARTITION BY role, pp_rank, label) = 1 THEN label
             ELSE label || '#' || dense_rank() OVER (PARTITION BY role, pp_rank, label ORDER BY fp_first) END
            AS fingerprint_group,
        CASE WHEN count(DISTINCT label) OVER (PARTITION BY role, pp_rank) = 1 THEN 'lockstep' ELSE 'divergent' END
            AS verdict
    FROM fp
),
group_text AS (
    SELECT role, pp_rank, fingerprint_group, min(rn) AS g_first,
           fingerprint_group || ': ' || string_agg(rank_label, ',' ORDER BY rn) AS g_text
    FROM grouped
    GROUP BY role, pp_rank, fingerprint_group
),
role_groups AS (
    SELECT role, pp_rank, string_agg(g_text, ' | ' ORDER BY g_first) AS groups
    FROM group_text
    GROUP BY role, pp_rank
)
SELECT g.host, g.role, g.dp_rank, g.pp_rank, g.tp_rank, g.ep_rank, g.rank_label, g.pid, g.capture_id,
       g.capture_ts, g.n_captures, g.thread_id, g.wait_class, g.backend, g.event_loop, g.wait_frame,
       g.innermost, g.fingerprint, g.fingerprint_group, g.no_progress, g.progress_gap_s, g.verdict, r.groups
FROM grouped g
LEFT JOIN role_groups r
    ON g.role IS NOT DISTINCT FROM r.role AND g.pp_rank IS NOT DISTINCT FROM r.pp_rank
ORDER BY g.role NULLS LAST, g.pp_rank NULLS LAST, g.rn;
