-- id: F3
-- title: DP attention idle batch: one rank dies in prepare_mlp_sync_batch_raw ('NoneType' object is not iterable), the others wait in its all_gather (#25404)
-- weight: 1
-- links: https://github.com/sgl-project/sglang/pull/25404
-- affects: DP attention with PD decode (reported on DeepSeek-V4, --enable-dp-attention --dp 16 --disaggregation-mode decode) before #25404 (2026-05-25)
-- needs: enable_dp_attention = True on a decode engine
-- config: enable_dp_attention AND disaggregation_mode = 'decode'
-- shows: enable_dp_attention, dp_size, disaggregation_mode
-- fixed_in:
-- fix: #25404 (merged 2026-05-25; the notes map no release to it)
-- workaround: upgrade past #25404
-- explains: the idle rank iterates a None list of an IDLE batch, crashes, and never joins the MLP-sync all_gather the other DP ranks block in
-- evidence: the TypeError traceback through prepare_mlp_sync_batch*
SELECT event_id, ts, host, role, source, source_pos,
       format('{} TP{}: {}: {} in {}', role, tp_rank, exception, exc_message, function) AS what
FROM tracebacks
WHERE exception = 'TypeError' AND exc_message LIKE '%NoneType%not iterable%'
  AND traceback LIKE '%prepare_mlp_sync_batch%'
