-- Question: round by round, where does the main thread of each rank wait in its py-spy capture
--   (collective, backend, SGLang event loop), do the ranks of one engine agree ("lockstep") or split
--   ("divergent", naming the groups), and did the stack stop changing between the last two captures
--   of that process ("no_progress")?
-- Tables: captures (one row per py-spy capture x thread, written by parsers/pyspy.py with wait_class,
--   backend, event_loop, fingerprint ...). The stacks table is not read: join stacks ON (capture_id,
--   thread_id) to see the frames of any row.
-- Columns: host, role, dp_rank, pp_rank, tp_rank, ep_rank, rank_label ("TP2", "DP1_PP0_TP1_EP1"),
--   is_rank (false for a process without rank: a launcher, tokenizer or other non-scheduler process),
--   pid, capture_id, capture_ts, n_captures (main-thread captures of this rank, all rounds),
--   round_no (1, 2 … per role in time order; NULL for captures without a time), round_ts (first
--   capture of the round), round_end_ts (last capture of the round), rounds (timed rounds of the
--   role), latest_round (true for the last timed round of the role, or for its untimed captures when
--   it has no timed one),
--   thread_id, wait_class, backend, event_loop, wait_frame, innermost, wait_label (the group:
--   wait_class, plus the backend when any stack of the group shows it, e.g. "broadcast(gloo)"),
--   fingerprint, fingerprint_group, no_progress, progress_gap_s, ranks_in_group, verdict, groups.
-- Parameters:
--   max_gap_s   two captures of one pid at most this many seconds apart with the same fingerprint are
--               no_progress (DOUBLE; default 600)
--   round_gap_s captures of one role less than this many seconds after the previous one belong to the
--               same round (DOUBLE; default 30)
-- How to read: one row per rank and round (rank = host, role, dp, pp, tp, ep; plus pid when a process
--   shows no ranks or has no role, then rank_label reads "TP0@3307" or "pid3307").
--   A round is one pass of dumps of an engine (role): its timed captures, each less than round_gap_s
--   after the previous one, before any restart (a capture of a rank by a new pid opens a new round).
--   Captures without a time (bare py-spy files) are put together in round NULL: whether they were
--   taken together cannot be told. Within a round each rank's last capture is shown.
--   The main thread is the one whose thread_id equals the pid, or named MainThread. Order: capture_ts,
--   then source, source_pos (as a number when it is one), capture_seq.
--   verdict is per (role, round, pp_rank) and counts ranks only (is_rank): "lockstep" when two or more
--   ranks all wait in the same wait_label, "divergent" when they split, "cannot tell: one rank
--   captured" or "cannot tell: no rank captured" otherwise. A group is the wait itself (wait_class):
--   "broadcast" and "broadcast(gloo)" are one group named "broadcast(gloo)"; only two different
--   backends shown for one class make two groups. groups lists "label: ranks" joined by " | ", e.g.
--   "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3" = a TP desync (processes without rank
--   when the round has no rank). fingerprint_group gets a "#k" suffix when ranks share a group but not
--   the exact stack. no_progress is true when the previous capture of the same pid had the same
--   fingerprint and was 0 < gap <= max_gap_s earlier, null when the gap is unknown. Which round a
--   verdict should rest on is desync's choice (the round during a stop, else the latest). role must
--   be set (ingest fills it from the unit) or engines mix.
WITH params AS (
    SELECT coalesce(getvariable('max_gap_s')::DOUBLE, 600.0) AS max_gap_s,
           coalesce(getvariable('round_gap_s')::DOUBLE, 30.0) AS round_gap_s
),
main AS (
    SELECT *, TRY_CAST(source_pos AS BIGINT) AS pos_num
    FROM captures
    WHERE coalesce(is_main, coalesce(thread_id = pid, false) OR thread_name = 'MainThread')
    QUALIFY row_number() OVER (PARTITION BY capture_id, thread_id ORDER BY capture_seq) = 1
),
ordered AS (
    SELECT *,
        -- a dump naming no rank (or no role) is its process's own; without a pid, its own capture's
        CASE WHEN (dp_rank IS NULL AND pp_rank IS NULL AND tp_rank IS NULL AND ep_rank IS NULL) OR role IS NULL
             THEN coalesce(CAST(pid AS VARCHAR), 'capture ' || capture_id) END AS key_pid,
        coalesce(dp_rank IS NOT NULL OR pp_rank IS NOT NULL OR tp_rank IS NOT NULL OR ep_rank IS NOT NULL
                 OR process_name ILIKE '%scheduler%', false) AS is_rank,
        row_number() OVER (ORDER BY capture_ts NULLS FIRST, source NULLS FIRST, pos_num NULLS FIRST,
                           source_pos NULLS FIRST, capture_seq NULLS FIRST, capture_id NULLS FIRST) AS ord
    FROM main
),
with_prev AS (
    SELECT *,
        CASE WHEN pid IS NOT NULL THEN lag(capture_id) OVER same_pid END AS prev_capture_id,
        CASE WHEN pid IS NOT NULL THEN lag(fingerprint) OVER same_pid END AS prev_fingerprint,
        CASE WHEN pid IS NOT NULL THEN lag(capture_ts) OVER same_pid END AS prev_ts,
        count(*) OVER rank_key AS n_captures,
        -- a new round: the role's first timed capture, a pause of round_gap_s, or a rank dumped by a
        -- new process (a restart) since its previous capture
        CASE WHEN capture_ts IS NULL THEN NULL
             WHEN lag(capture_ts) OVER timed_role IS NULL
                  OR epoch_us(capture_ts) - epoch_us(lag(capture_ts) OVER timed_role)
                     > (SELECT round_gap_s FROM params) * 1e6
                  OR (pid IS NOT NULL AND lag(pid) OVER timed_rank IS NOT NULL AND pid <> lag(pid) OVER timed_rank)
             THEN 1 ELSE 0 END AS new_round
    FROM ordered
    WINDOW same_pid AS (PARTITION BY host, pid ORDER BY ord),
           rank_key AS (PARTITION BY host, role, dp_rank, pp_rank, tp_rank, ep_rank, key_pid),
           timed_role AS (PARTITION BY role, capture_ts IS NULL ORDER BY ord),
           timed_rank AS (PARTITION BY host, role, dp_rank, pp_rank, tp_rank, ep_rank, key_pid, capture_ts IS NULL
                          ORDER BY ord)
),
rounds AS (
    SELECT *,
        CASE WHEN capture_ts IS NOT NULL
             THEN sum(new_round) OVER (PARTITION BY role, capture_ts IS NULL ORDER BY ord
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) END AS round_no
    FROM with_prev
),
round_span AS (
    SELECT *,
        min(capture_ts) OVER same_round AS round_ts,
        max(capture_ts) OVER same_round AS round_end_ts,
        max(round_no) OVER (PARTITION BY role) AS rounds
    FROM rounds
    WINDOW same_round AS (PARTITION BY role, round_no)
),
last AS (
    SELECT *,
        CASE WHEN prev_capture_id IS NOT NULL
             THEN (epoch_us(capture_ts) - epoch_us(prev_ts)) / 1e6 END AS progress_gap_s,
        round_no IS NOT DISTINCT FROM rounds AS latest_round
    FROM round_span
    QUALIFY row_number() OVER (PARTITION BY host, role, dp_rank, pp_rank, tp_rank, ep_rank, key_pid, round_no
                               ORDER BY ord DESC) = 1
),
labelled AS (
    SELECT *,
        CASE WHEN prev_capture_id IS NULL OR prev_fingerprint IS DISTINCT FROM fingerprint THEN false
             WHEN progress_gap_s IS NULL OR progress_gap_s <= 0 THEN NULL
             WHEN progress_gap_s <= (SELECT max_gap_s FROM params) THEN true
             ELSE false END AS no_progress,
        coalesce(wait_class, 'unknown') AS wait_key,
        coalesce(nullif(concat_ws('_', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank), '')
                     || CASE WHEN role IS NULL THEN '@' || coalesce(CAST(pid AS VARCHAR), 'thread ' || thread_id) ELSE '' END,
                 coalesce('pid' || CAST(pid AS VARCHAR), 'thread ' || thread_id)) AS rank_label,
        row_number() OVER (PARTITION BY role, round_no, pp_rank
                           ORDER BY dp_rank NULLS LAST, tp_rank NULLS LAST, ep_rank NULLS LAST, host NULLS LAST,
                                    pid NULLS LAST, thread_id NULLS LAST, capture_id NULLS LAST) AS rn
    FROM last
),
backends AS (
    -- the group is the wait itself: its backend is the one any of its stacks shows; only two
    -- different backends for one wait make two groups
    SELECT *,
        wait_key || coalesce('(' || CASE WHEN count(DISTINCT backend) OVER same_wait = 1
                                         THEN max(backend) OVER same_wait ELSE backend END || ')', '')
            AS wait_label
    FROM labelled
    WINDOW same_wait AS (PARTITION BY role, round_no, pp_rank, wait_key)
),
fp AS (
    SELECT *, min(rn) OVER (PARTITION BY role, round_no, pp_rank, fingerprint) AS fp_first,
        count(*) FILTER (WHERE is_rank) OVER (PARTITION BY role, round_no, pp_rank) AS ranks_in_group
    FROM backends
),
grouped AS (
    SELECT *,
        CASE WHEN count(DISTINCT fingerprint) OVER (PARTITION BY role, round_no, pp_rank, wait_label) = 1
             THEN wait_label
             ELSE wait_label || '#' || dense_rank() OVER (PARTITION BY role, round_no, pp_rank, wait_label
                                                          ORDER BY fp_first) END
            AS fingerprint_group,
        CASE WHEN ranks_in_group = 0 THEN 'cannot tell: no rank captured'
             WHEN ranks_in_group = 1 THEN 'cannot tell: one rank captured'
             WHEN count(DISTINCT wait_label) FILTER (WHERE is_rank) OVER (PARTITION BY role, round_no, pp_rank) = 1
             THEN 'lockstep' ELSE 'divergent' END AS verdict
    FROM fp
),
group_text AS (
    SELECT role, round_no, pp_rank, fingerprint_group, min(rn) AS g_first,
           fingerprint_group || ': ' || string_agg(rank_label, ',' ORDER BY rn) AS g_text
    FROM grouped
    WHERE is_rank OR ranks_in_group = 0
    GROUP BY role, round_no, pp_rank, fingerprint_group
),
role_groups AS (
    SELECT role, round_no, pp_rank, string_agg(g_text, ' | ' ORDER BY g_first) AS groups
    FROM group_text
    GROUP BY role, round_no, pp_rank
)
SELECT g.host, g.role, g.dp_rank, g.pp_rank, g.tp_rank, g.ep_rank, g.rank_label, g.is_rank, g.pid, g.capture_id,
       g.capture_ts, g.n_captures, g.round_no, g.round_ts, g.round_end_ts, g.rounds, g.latest_round,
       g.thread_id, g.wait_class, g.backend, g.event_loop, g.wait_frame, g.innermost, g.wait_label,
       g.fingerprint, g.fingerprint_group, g.no_progress, g.progress_gap_s, g.ranks_in_group, g.verdict, r.groups
FROM grouped g
LEFT JOIN role_groups r
    ON g.role IS NOT DISTINCT FROM r.role AND g.round_no IS NOT DISTINCT FROM r.round_no
       AND g.pp_rank IS NOT DISTINCT FROM r.pp_rank
ORDER BY g.role NULLS LAST, g.round_no NULLS FIRST, g.pp_rank NULLS LAST, g.rn;
