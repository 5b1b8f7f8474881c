"""What ``logcorr collect`` (or SGLang's incident bundle tool) asked and took on each host, in words: the
report's section on a bundle.

Not a saved query (``queries/``): every saved query must give rows on the sample incident, which holds
no bundle. The rows it reads are the ``probes`` table (``logcorr query 'SELECT * FROM probes' -d OUT``);
the header below documents its columns as a saved query's header does.
"""

SQL = """\
-- question: What did `logcorr collect` ask and take on each host before the restart: each endpoint's
--   answer with its latency (or the timeout), each round of py-spy dumps (when, how many schedulers,
--   which refused and why), the journal and the tools it ran?
-- tables: probes
-- columns:
--   host        the host the bundle was taken on
--   step        endpoint, pyspy (one row per round), journal, container_log, gpu, kernel, check_env
--   round_no    the py-spy round (NULL for other steps)
--   first_ts    when the step (the round's first dump) started (UTC)
--   last_ts     when the round's last dump started (UTC; the step's start for other steps)
--   target      the URL asked or the command run; for a round "N schedulers"
--   status      the HTTP status or exit status (NULL: no answer; for a round NULL)
--   latency_ms  how long the answer took, milliseconds (for a round the slowest dump; NULL: not timed,
--               as in SGLang's incident bundle)
--   taken       dumps taken in the round (1 or 0 for other steps: the step gave output or an answer)
--   failed      dumps of the round that failed (1 or 0 for other steps)
--   said        the step in words: "/health 200 in 3 ms", "/health_generate timed out after 5 s",
--               "round 2: 3 of 4 dumps taken; pid 4711 sglang::scheduler_TP1: Permission denied"
--   fix         what would make the failed ones work (CAP_SYS_PTRACE, kernel.yama.ptrace_scope)
--   source      the bundle's manifest
-- parameters: none.
-- reading: a /health that answers 200 while /health_generate times out is the wedge seen from outside:
--   the HTTP server lives, no forward pass completes. Two rounds of dumps whose stacks did not change
--   (desync's no_progress) are what proves a rank made no progress; a round with failed dumps says
--   which ranks are missing from the desync verdict and why. Empty: no bundle in the data.
WITH steps AS (
    SELECT *, CASE WHEN regexp_matches(target, '^https?://[^/]+/') THEN regexp_extract(target, '^https?://[^/]+(/.*)$', 1)
                     ELSE target END AS what
    FROM probes
),
rounds AS (
    SELECT host, step, round_no, min(ts) AS first_ts, max(ts) AS last_ts,
           count(*) || ' schedulers' AS target, NULL::INTEGER AS status, max(latency_ms) AS latency_ms,
           count(*) FILTER (WHERE error IS NULL) AS taken, count(*) FILTER (WHERE error IS NOT NULL) AS failed,
           'round ' || round_no || ': ' || count(*) FILTER (WHERE error IS NULL) || ' of ' || count(*)
             || ' dumps taken'
             || coalesce('; ' || string_agg('pid ' || pid || ' ' || target || ': ' || error, '; ' ORDER BY pid)
                                   FILTER (WHERE error IS NOT NULL), '') AS said,
           string_agg(DISTINCT fix, '; ') AS fix, any_value(source) AS source
    FROM steps WHERE step = 'pyspy'
    GROUP BY host, step, round_no
),
others AS (
    SELECT host, step, round_no, ts AS first_ts, ts AS last_ts, target, status, latency_ms,
           (error IS NULL)::INTEGER AS taken, (error IS NOT NULL)::INTEGER AS failed,
           CASE WHEN step = 'endpoint' AND status IS NOT NULL
                THEN what || ' ' || status || coalesce(' in ' || round(latency_ms)::BIGINT || ' ms', '')
                WHEN step = 'endpoint' THEN what || ' ' || coalesce(error, 'no answer')
                ELSE step || ' (' || what || '): '
                     || coalesce(error, bytes || ' bytes' || coalesce(' in ' || round(latency_ms)::BIGINT || ' ms', ''))
           END AS said,
           fix, source
    FROM steps WHERE step <> 'pyspy'
)
SELECT * FROM rounds
UNION ALL
SELECT * FROM others
ORDER BY host, step <> 'pyspy', step <> 'endpoint', round_no, first_ts
"""
