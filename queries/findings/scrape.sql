-- question: What did the server say of itself when someone asked it: a /health that answered while
--   /health_generate failed (an incident bundle or logcorr collect), SGLang's own log that its health check
--   failed, and failure counters above zero in a Prometheus scrape (failed transfers and bootstraps, KV transfer
--   timeouts, prefill retries)?
-- tables: probes, metrics, events, requests
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
--   pass completed (the wedge seen from outside); and one per input, host and role whose records hold SGLang's
--   `Health check failed. Server couldn't get a response from detokenizer for last N seconds. tic start time:
--   …. last_heartbeat time: …` (http_server.py's health_generate, logged at ERROR before it answers 503: the
--   probe's generate request came back from no detokenizer), with the 5xx answers to /health or
--   /health_generate printed within a second of them. One failure_counters row per (host, role, counter)
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
-- SGLang's own word that its health check failed (http_server.py health_generate: logger.error, then a 503;
-- batch22/05: `2025-09-24 05:48:14] Health check failed. … for last 20 seconds. tic start time: 05:47:54.
-- last_heartbeat time: 05:42:53`, its `[` lost in the paste, then `GET /health` 503)
said_failed AS (
    SELECT e.event_id, e.ts, e.source, e.host, coalesce(e.role, 'unknown') AS role,
           concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank) AS rank_label,
           nullif(regexp_extract(e.message, 'for last (\d+(?:\.\d+)?) seconds', 1), '') AS secs,
           nullif(regexp_extract(e.message, 'tic start time: ([\d:.]*\d)', 1), '') AS tic,
           nullif(regexp_extract(e.message, 'last_heartbeat time: ([\d:.]*\d)', 1), '') AS heartbeat
    FROM records e
    WHERE e.kind = 'health' AND regexp_matches(e.message, 'Health check failed\. Server couldn''t get a response from detokenizer')
      AND NOT starts_with(ltrim(e.message), '#')
),
said_503 AS (  -- the 5xx answers to a health probe printed within a second of one of those records
    SELECT DISTINCT f.source, f.host, f.role, q.event_id, q.status, q.path
    FROM said_failed f JOIN requests q
      ON q.source = f.source AND q.host IS NOT DISTINCT FROM f.host AND q.status >= 500
     AND regexp_matches(coalesce(q.path, ''), '^/health(?:_generate)?$')
     AND q.ts BETWEEN f.ts - INTERVAL 1 SECOND AND f.ts + INTERVAL 1 SECOND
),
said AS (
    SELECT f.source, f.host, f.role, min(f.ts) AS ts, max(f.ts) AS end_ts, count(*)::BIGINT AS n,
           list_sort(list_distinct(list(f.rank_label) FILTER (WHERE f.rank_label <> ''))) AS ranks,
           list(f.event_id ORDER BY f.event_id) AS ids,
           arg_min(f.secs, f.event_id) AS secs, arg_min(f.tic, f.event_id) AS tic, arg_min(f.heartbeat, f.event_id) AS heartbeat
    FROM said_failed f GROUP BY ALL
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
SELECT d.ts, d.end_ts, 'health_generate_failed', d.role, d.host, d.ranks, d.n,
       'SGLang''s health check failed' || CASE WHEN d.n > 1 THEN ' ' || d.n || ' times' ELSE '' END
       || coalesce(' at ' || strftime(d.ts, '%Y-%m-%d %H:%M:%S UTC'), ' (no time read)')
       || CASE WHEN d.end_ts > d.ts THEN ' to ' || strftime(d.end_ts, '%H:%M:%S UTC') ELSE '' END
       || ': no response from the detokenizer' || coalesce(' for ' || d.secs || ' s', '')
       || coalesce(' (the probe began ' || d.tic || coalesce(', the last heartbeat ' || d.heartbeat, '') || ', as printed)', '')
       || coalesce(', and ' || (SELECT string_agg(DISTINCT a.path || ' answered ' || a.status, ', ') FROM said_503 a
                                 WHERE a.source = d.source AND a.host IS NOT DISTINCT FROM d.host AND a.role = d.role), '')
       || ': the HTTP server answered, the probe''s generate request got no reply',
       list_concat(d.ids, coalesce((SELECT list(a.event_id ORDER BY a.event_id) FROM said_503 a
                                    WHERE a.source = d.source AND a.host IS NOT DISTINCT FROM d.host AND a.role = d.role), [])),
       'events: SGLang''s "Health check failed" record (http_server.py health_generate), with requests: a health probe''s 5xx within 1 s'
FROM said d
UNION ALL
SELECT last_ts, last_ts, 'failure_counters', role, host, ranks, total::BIGINT,
       'The scrape at ' || coalesce(strftime(last_ts, '%Y-%m-%d %H:%M:%S UTC'), 'an unknown time')
       || coalesce(' of ' || host, '') || ' counts ' || total::BIGINT || ' ' || said || ' on ' || role
       || coalesce(' ' || nullif(array_to_string(ranks, ', '), ''), '') || ' (' || counter_name || '_total'
       || CASE WHEN scrapes > 1 THEN ', up ' || (total - first_total)::BIGINT || ' since the scrape at '
                 || strftime(first_ts, '%H:%M:%S UTC') ELSE ', since the server started' END || ')',
       evidence, 'metrics: a failure counter above zero at the last scrape'
FROM at_last WHERE total > 0
