-- id: F1
-- title: Overlap scheduler: the TP ranks of one engine stop in lockstep-breaking waits under event_loop_overlap (sglang#26454)
-- weight: 1
-- links: https://github.com/sgl-project/sglang/issues/26454, https://github.com/sgl-project/sglang/pull/26380
-- affects: reported on v0.5.11 and v0.5.12.post1 (TP=8 over 2 nodes, no DP attention); the overlap scheduler is the default in every version
-- needs: overlap scheduling on (disable_overlap_schedule = False), no DP attention (with DP attention see F2), pp_size = 1
-- config: NOT disable_overlap_schedule AND NOT coalesce(enable_dp_attention, false) AND coalesce(pp_size, 1) = 1
-- shows: disable_overlap_schedule, enable_dp_attention, tp_size, pp_size
-- fixed_in:
-- fix: not fixed upstream as of the notes (the issue closed as inactive); #26380 (a WAR barrier for overlap buffer writes, 2026-05-26) is related, not named as the fix
-- workaround: run the engine with --disable-overlap-schedule ("reliably avoids the hang", sglang#26454)
-- explains: the py-spy stacks of the engine's TP ranks, all under event_loop_overlap*, either wait together in result.copy_done.synchronize()/cuEventSynchronize (the stack #26454 reports) or split across collectives (a divergent TP group); #26454 shows the symmetric form, the split form is a wider reading of the same overlap-loop desync
-- evidence: the last capture of each rank of a TP group that is divergent under an overlap event loop (saved query desync), or any main thread under event_loop_overlap* waiting in copy_done.synchronize / cuEventSynchronize
SELECT NULL::BIGINT AS event_id, capture_ts AS ts, host, role, source, source_pos,
       format('{} {} waits in {} under {} ({}: {})', role, rank_label, wait_label, event_loop, verdict, groups) AS what
FROM desync
WHERE verdict = 'divergent' AND event_loop LIKE 'event_loop_overlap%'
UNION ALL
SELECT NULL::BIGINT, capture_ts, host, role, source, source_pos,
       format('{} TP{} in {} under {}', role, tp_rank, wait_frame, event_loop)
FROM captures
WHERE is_main AND event_loop LIKE 'event_loop_overlap%'
  AND (wait_frame ILIKE '%copy_done%' OR innermost ILIKE '%cuEventSynchronize%'
       OR (wait_frame ILIKE 'synchronize %' AND event_loop LIKE 'event_loop_overlap%'))
