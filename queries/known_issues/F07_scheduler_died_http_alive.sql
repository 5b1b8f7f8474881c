-- id: F7
-- title: A scheduler process died (NCCL C++ abort) while the HTTP server stayed up (#18421, fixed by #18582)
-- weight: 1
-- links: https://github.com/sgl-project/sglang/issues/18421, https://github.com/sgl-project/sglang/pull/18582, https://github.com/sgl-project/sglang/issues/29144
-- affects: before #18582 (merged 2026-03-29) the death goes unnoticed; after it SGLang logs "Subprocess … crashed with exit code … Triggering SIGQUIT" and stops
-- needs: any engine
-- config: true
-- shows: watchdog_timeout, dist_timeout, nnodes
-- fixed_in:
-- fix: #18582 (merged 2026-03-29; the notes map no release to it): the crash is noticed and the server stops; #21486 (node_rank >= 1 health server) not merged
-- workaround: a liveness probe that generates; --dist-timeout to bound collective waits
-- explains: the scheduler subprocess was killed below Python (std::terminate on an NCCL timeout), no SIGQUIT reached the parent, requests hang without an error
-- evidence: SGLang's SubprocessWatchdog line "Subprocess scheduler_N … crashed with exit code"
SELECT event_id, ts, host, role, source, source_pos,
       format('{} scheduler subprocess crashed with exit code {}', role, exit_code) AS what
FROM watchdogs
-- the line is parsed into watchdogs (watchdog_kind subprocess_crashed), kind watchdog in events: a
-- small table instead of a scan of every message of the day
WHERE watchdog_kind = 'subprocess_crashed' AND role IN ('prefill', 'decode', 'engine', 'unknown')
