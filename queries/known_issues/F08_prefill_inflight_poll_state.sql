-- id: F8
-- title: PD prefill inflight queue meets an unexpected KV poll state (AssertionError, later a warning, later a RuntimeError) (#20485, #25063)
-- weight: 1
-- links: https://github.com/sgl-project/sglang/issues/20485, https://github.com/sgl-project/sglang/pull/20686, https://github.com/sgl-project/sglang/issues/25063, https://github.com/sgl-project/sglang/pull/24967, https://github.com/sgl-project/sglang/pull/31075
-- affects: PD prefill (often with PP, mooncake); an AssertionError until #20686 (2026-03-16), a warning until #31075 (2026-07-13), a RuntimeError after
-- needs: a prefill engine (disaggregation_mode = prefill)
-- config: disaggregation_mode = 'prefill'
-- shows: disaggregation_mode, pp_size, disaggregation_transfer_backend
-- fixed_in:
-- fix: #20686 (2026-03-16), #24967 (2026-05-12), #31075 (2026-07-13), each changing the message (the notes map no release to them); #25063 names no fix
-- workaround: none documented; upgrade
-- explains: a request in the prefill inflight queue polls Bootstrapping (or another unexpected state) after its KV was sent; the scheduler dies or treats it as undone
-- evidence: an AssertionError traceback through process_disagg_prefill_inflight_queue, or the "Unexpected polling state"/"Unexpected poll state" lines; a traceback cut before its exception is not evidence
SELECT event_id, ts, host, role, source, source_pos, format('{} TP{}: AssertionError in {}', role, tp_rank, function) AS what
FROM tracebacks
WHERE exception = 'AssertionError' AND traceback LIKE '%process_disagg_prefill_inflight_queue%'
UNION ALL
-- the warnings are transfer errors of their own kind (parsers/sglang_lines.py): a small table, not a
-- scan of every message of the day
SELECT event_id, ts, host, role, source, source_pos,
       format('{} TP{}: unexpected KV poll state of a request in the inflight queue', role, tp_rank)
FROM transfer_errors
WHERE error_kind = 'inflight_poll_state'
UNION ALL
SELECT event_id, ts, host, role, source, source_pos, format('{} TP{}: {} in {}', role, tp_rank, exception, function)
FROM tracebacks
WHERE exception = 'RuntimeError' AND traceback LIKE '%nexpected poll state%in inflight queue%'
