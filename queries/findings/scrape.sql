-- question: What did the server say of itself when someone asked it: a /health that answered while
--   /health_generate failed (an incident bundle or logcorr collect), and failure counters above zero in a
--   Prometheus scrape (failed transfers and bootstraps, KV transfer timeouts, prefill retries)?
-- tables: probes, metrics
-- columns:
--   ts        when the endpoints were asked, or the scrape (UTC)
--   end_ts    the same (one instant), or the last scrape of the counter
--   kind      health_generate_failed, failure_counters
--   role      the scraped engine's role (failure_counters); unknown for endpoint answers
--   host      the host asked or scraped
--   ranks     the ranks whose counter is above zero, e.g. [TP0, TP1]
--   n         the counter summed over those ranks at the last scrape (failure_counters); 1 (health_generate_failed)
--   summary   the finding in words and numbers
--   evidence  events.event_id of the answers or samples it rests on
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one health_generate_failed row per host and time asked where /health answered a status below
--   400 and /health_generate did not answer or answered 400 or more: the HTTP server lives, no forward
--   pass completed (the wedge seen from outside). One failure_counters row per (host, role, counter)
--   whose value is above zero at the last scrape: counters count from the server's start, so a second
--   scrape's increase dates them better.
WITH health AS (
    SELECT host, ts, event_id, regexp_extract(target, '(/health(?:_generate)?)$', 1) AS endpoint, status, error
    FROM probes WHERE step = 'endpoint' AND regexp_matches(target, '/health(?:_generate)?$')
),
lying AS (
    SELECT h.host, h.ts, [h.event_id, g.event_id] AS evidence, h.status AS health_status,
           coalesce(g.error, 'status ' || g.status, 'no answer') AS generate_said
    FROM health h JOIN health g ON g.host IS NOT DISTINCT FROM h.host AND g.ts = h.ts AND g.endpoint = '/health_generate'
    WHERE h.endpoint = '/health' AND h.status < 400 AND (g.status IS NULL OR g.status >= 400)
),
counters(counter, said) AS (VALUES
    ('sglang:num_transfer_failed_reqs', 'failed KV transfers'),
    ('sglang:num_bootstrap_failed_reqs', 'failed bootstraps'),
    ('sglang:kv_transfer_timeouts', 'KV transfer timeouts'),
    ('sglang:num_prefill_retries', 'prefill retries')
),
samples AS (
    SELECT m.*, c.said, regexp_replace(m.name, '_total$', '') AS counter_name
    FROM metrics m JOIN counters c ON regexp_replace(m.name, '_total$', '') = c.counter
),
last_scrape AS (
    SELECT host, role, counter_name, max(ts) AS last_ts, min(ts) AS first_ts FROM samples GROUP BY ALL
),
at_last AS (
    SELECT s.host, s.role, s.counter_name, any_value(s.said) AS said, l.first_ts, l.last_ts,
           sum(s.value) FILTER (WHERE s.ts IS NOT DISTINCT FROM l.last_ts) AS total,
           list_sort(list_distinct(list('TP' || s.tp_rank) FILTER (WHERE s.value > 0 AND s.tp_rank IS NOT NULL
                                                                      AND s.ts IS NOT DISTINCT FROM l.last_ts))) AS ranks,
           list(s.event_id ORDER BY s.ts) FILTER (WHERE s.value > 0) AS evidence,
           count(DISTINCT s.ts) AS scrapes,
           sum(s.value) FILTER (WHERE s.ts IS NOT DISTINCT FROM l.first_ts) AS first_total
    FROM samples s JOIN last_scrape l
      ON l.host IS NOT DISTINCT FROM s.host AND l.role = s.role AND l.counter_name = s.counter_name
    GROUP BY s.host, s.role, s.counter_name, l.first_ts, l.last_ts
)
SELECT ts, ts AS end_ts, 'health_generate_failed' AS kind, 'unknown' AS role, host, []::VARCHAR[] AS ranks,
       1::BIGINT AS n,
       'Asked at ' || coalesce(strftime(ts, '%Y-%m-%d %H:%M:%S UTC'), 'an unknown time') || coalesce(' on ' || host, '')
       || ', /health answered ' || health_status || ' while /health_generate failed (' || generate_said
       || '): the HTTP server lived, no generation completed' AS summary,
       evidence, 'probes: /health below 400 and /health_generate failed, asked together' AS rests_on
FROM lying
UNION ALL
SELECT last_ts, last_ts, 'failure_counters', role, host, ranks, total::BIGINT,
       'The scrape at ' || coalesce(strftime(last_ts, '%Y-%m-%d %H:%M:%S UTC'), 'an unknown time')
       || coalesce(' of ' || host, '') || ' counts ' || total::BIGINT || ' ' || said || ' on ' || role
       || coalesce(' ' || nullif(array_to_string(ranks, ', '), ''), '') || ' (' || counter_name || '_total'
       || CASE WHEN scrapes > 1 THEN ', up ' || (total - first_total)::BIGINT || ' since the scrape at '
                 || strftime(first_ts, '%H:%M:%S UTC') ELSE ', since the server started' END || ')',
       evidence, 'metrics: a failure counter above zero at the last scrape'
FROM at_last WHERE total > 0
