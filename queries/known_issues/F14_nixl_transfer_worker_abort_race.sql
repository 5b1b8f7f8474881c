-- id: F14
-- title: NIXL prefill transfer worker races abort cleanup: "Unexpected transfer worker error for room N" (assert room in self.transfer_infos)
-- weight: 1
-- links: https://github.com/sgl-project/sglang/pull/23967, https://github.com/sgl-project/sglang/pull/27011, https://github.com/sgl-project/sglang/pull/36707, https://github.com/sgl-project/sglang/pull/36108
-- affects: SGLang with the asynchronous NIXL transfer worker (#23967, 2026-05-07 on main; the same strings in the NIXL sender before it), prefill side
-- needs: prefill with disaggregation_transfer_backend = nixl
-- config: disaggregation_transfer_backend = 'nixl'
-- shows: disaggregation_transfer_backend, disaggregation_mode
-- fixed_in:
-- fix: not fixed upstream as of the notes (no upstream issue names this race); related: #27011 (failure_exception clears the room), #30352 (Failed sticky), open #36707 (drop queued chunks of a failed room) and #36108 (notify decode)
-- workaround: no documented flag; fewer client aborts during transfers, and restart the engines when the assertion appears (decode waits SGLANG_DISAGGREGATION_WAITING_TIMEOUT, 300 s, for such a room)
-- explains: a room aborted and cleaned up while a KV chunk for it was still queued: the worker passes the Failed check (the cleared room reads as WaitingForInput), hits the assertion on some TP ranks only, and the ranks' state for that room diverges
-- evidence: the transfer_infos assertion records (transfer_errors.error_kind = assert_transfer_infos); a RuntimeError or any other exception after the same "Unexpected transfer worker error" line is not this family
SELECT event_id, ts, host, role, source, source_pos,
       format('{} TP{}: assert room in self.transfer_infos for room {}', role, tp_rank, bootstrap_room) AS what
FROM transfer_errors
WHERE error_kind = 'assert_transfer_infos'
