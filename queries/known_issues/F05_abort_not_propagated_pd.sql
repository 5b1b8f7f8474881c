-- id: F5
-- title: Client aborts not propagated into the PD queues: decode KV fills up and decode hangs (#8177, fixed by #8352)
-- weight: 2
-- links: https://github.com/sgl-project/sglang/issues/8177, https://github.com/sgl-project/sglang/pull/8352, https://github.com/sgl-project/sglang/pull/25561
-- affects: SGLang before v0.4.9.post5 (#8352); later leaks of the same kind fixed by #25561 and #28022
-- needs: a PD engine (disaggregation_mode prefill or decode)
-- config: disaggregation_mode IN ('prefill', 'decode')
-- shows: disaggregation_mode, disaggregation_transfer_backend
-- fixed_in: 0.4.9.post5
-- fix: #8352 (v0.4.9.post5); #25561 (2026-05-18), #28022 (2026-06-12)
-- workaround: upgrade; client-side timeouts that disconnect are the trigger
-- explains: aborted requests keep their decode KV slots, so decode token usage climbs to 1 after an abort burst and decode stops
-- evidence: decode batches with token usage of 0.95 or more within 10 minutes after at least 10 aborts on the same host
WITH burst AS (
    SELECT host, min(ts) AS lo, max(ts) AS hi, count(*) AS n FROM aborts GROUP BY host HAVING count(*) >= 10
)
SELECT b.event_id, b.ts, b.host, b.role, b.source, b.source_pos,
       format('decode TP{} token usage {} after {} aborts', b.tp_rank, b.token_usage, burst.n) AS what
FROM batches b JOIN burst ON b.host = burst.host
WHERE b.role = 'decode' AND b.token_usage >= 0.95
  AND b.ts BETWEEN burst.lo AND burst.hi + INTERVAL 10 MINUTE
