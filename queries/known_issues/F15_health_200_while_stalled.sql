-- id: F15
-- title: /health keeps answering 200 while the engine advances no batch
-- weight: 2
-- links: https://github.com/sgl-project/sglang/issues/6624, https://github.com/sgl-project/sglang/issues/29144, https://github.com/sgl-project/sglang/pull/20259, https://github.com/sgl-project/sglang/issues/35884
-- affects: every version: up to v0.4.10.post1 /health is a plain 200; since #8444 it is a 1-token probe that a scheduler still producing any output, or a PD probe on the fake transfer backend, passes
-- needs: any engine (no setting required)
-- config: true
-- shows: disaggregation_mode, watchdog_timeout
-- fixed_in:
-- fix: not fixed upstream as of the notes: #35896 (abort timed-out probes) open; #18582 (2026-03-29) stops a server whose scheduler died (F7), not one whose scheduler is wedged
-- workaround: probe liveness with a real generation through the router (and alert on no batch progress), not /health
-- explains: the liveness probe passed while the engine was wedged, so nothing restarted it
-- evidence: a stop of one role with requests running (saved query wedge: running_req_at_stop > 0, stalled at least 60 s) during which /health answered only 200
SELECT event_id, stopped_ts AS ts, NULL::VARCHAR AS host, role, source, source_pos,
       format('{} stopped with {} running requests; {} /health checks answered 200 in the {} s before restart or resumption',
              role, running_req_at_stop, health_200, round(coalesce(until_restart_s, stalled_s), 1)) AS what
FROM wedge
WHERE running_req_at_stop > 0 AND health_kept_200 AND coalesce(until_restart_s, stalled_s) >= 60
