-- id: F9
-- title: HiCache TP collective mismatch: one rank in all_reduce under writing_check/loading_check/prefetch, the others in broadcast_pyobj of recv_requests
-- weight: 1
-- links: https://github.com/sgl-project/sglang/pull/27489, https://github.com/sgl-project/sglang/pull/26923, https://github.com/sgl-project/sglang/issues/26921, https://github.com/sgl-project/sglang/issues/30760
-- affects: enable_hierarchical_cache with TP > 1 before #27489 (2026-06-08) / #26923 (2026-06-22); the prefetch variant (#30760, 0.5.13.post1) is still open
-- needs: enable_hierarchical_cache = True on the engine whose ranks split
-- config: enable_hierarchical_cache
-- shows: enable_hierarchical_cache, hicache_storage_backend, tp_size
-- fixed_in:
-- fix: #27489 (2026-06-08), #26923 (2026-06-22) (the notes map no release to them); the prefetch variant not fixed upstream as of the notes (#30760, #33029 open)
-- workaround: upgrade past #26923; none documented besides turning HiCache (or its storage backend) off
-- explains: per-rank cache state differs, one rank skips or enters the HiCache all_reduce, and the ranks wait in different collectives on the same gloo group
-- evidence: a main thread whose stack holds writing_check, loading_check, check_hicache_events, check_prefetch_progress or can_terminate_prefetch while it waits in a collective
SELECT NULL::BIGINT AS event_id, c.capture_ts AS ts, c.host, c.role, c.source, c.source_pos,
       format('{} TP{} waits in {} under {}', c.role, c.tp_rank, c.wait_class, s.function) AS what
FROM captures c
JOIN stacks s USING (capture_id, thread_id)
WHERE c.is_main AND c.wait_class IN ('all_reduce', 'all_gather', 'broadcast', 'barrier')
  AND s.function IN ('writing_check', 'loading_check', 'check_hicache_events', 'check_prefetch_progress',
                     'can_terminate_prefetch')
