-- id: F13
-- title: Decode holds a request for SGLANG_DISAGGREGATION_WAITING_TIMEOUT after a prefill failure or abort ("timed out after 300.0s in KVPoll.WaitingForInput")
-- weight: 2
-- links: https://github.com/sgl-project/sglang/pull/28651, https://github.com/sgl-project/sglang/pull/29017, https://github.com/sgl-project/sglang/pull/36612, https://github.com/sgl-project/sglang/pull/36108
-- affects: PD decode of every version with the waiting timeout; the router fix #29017 (2026-07-03) and the shared failure notice #36612 (2026-08) shorten it
-- needs: a decode engine (disaggregation_mode = decode)
-- config: disaggregation_mode = 'decode'
-- shows: disaggregation_mode, disaggregation_transfer_backend
-- fixed_in:
-- fix: shortened, not removed: #29017 (router, 2026-07-03), #36612 (prefill→decode failure notice, merged about 2026-08-30) (the notes map no release to them); NIXL #36108 open
-- workaround: lower SGLANG_DISAGGREGATION_WAITING_TIMEOUT (default 300 s) on decode so slots of failed rooms come back sooner
-- explains: decode never learns that prefill gave up on a room and keeps the slot until the waiting timeout: an abort storm becomes minutes of lost capacity
-- evidence: decode transfer failures that name a timeout in KVPoll.WaitingForInput
SELECT event_id, ts, host, role, source, source_pos,
       format('decode TP{}: room {} timed out after {} s in KVPoll.WaitingForInput', tp_rank, bootstrap_room, timeout_s) AS what
FROM transfer_errors
WHERE role = 'decode' AND cause = 'timeout' AND kv_poll_state = 'WaitingForInput'
