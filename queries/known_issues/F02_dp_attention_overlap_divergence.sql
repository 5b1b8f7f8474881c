-- id: F2
-- title: DP attention + overlap: DP ranks disagree on disabling overlap for a batch and stall (sglang#20315, fixed by #20853)
-- weight: 1
-- links: https://github.com/sgl-project/sglang/issues/20315, https://github.com/sgl-project/sglang/pull/20853, https://github.com/sgl-project/sglang/pull/20408
-- affects: SGLang with SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP (added 2025-11-12) before #20853 (merged 2026-03-18)
-- needs: enable_dp_attention = True with the overlap scheduler on (and the env var SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP=1, which no log line shows)
-- config: enable_dp_attention AND NOT disable_overlap_schedule
-- shows: enable_dp_attention, dp_size, disable_overlap_schedule
-- fixed_in:
-- fix: #20853 (merged 2026-03-18; the notes map no release to it)
-- workaround: leave SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP unset, or --disable-overlap-schedule; upgrade past #20853
-- explains: one DP rank treats a batch as extend, another as decode, so they take different overlap branches and wait for each other in cuEventSynchronize
-- evidence: the same stacks as F1 (ranks stalled under an overlap event loop); only the configuration tells F1 and F2 apart
SELECT NULL::BIGINT AS event_id, capture_ts AS ts, host, role, source, source_pos,
       format('{} {} waits in {} under {} ({})', role, rank_label, wait_label, event_loop, verdict) AS what
FROM desync
WHERE verdict = 'divergent' AND event_loop LIKE 'event_loop_overlap%'
UNION ALL
SELECT NULL::BIGINT, capture_ts, host, role, source, source_pos,
       format('{} DP{} TP{} in {} under {}', role, dp_rank, tp_rank, wait_frame, event_loop)
FROM captures
WHERE is_main AND event_loop LIKE 'event_loop_overlap%'
  AND (wait_frame ILIKE '%copy_done%' OR innermost ILIKE '%cuEventSynchronize%')
