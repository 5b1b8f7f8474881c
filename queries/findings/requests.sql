-- question: Which requests failed: answered 5xx (router responses, access lines) or logged as an ERROR
--   without a status (the router's "Failed to select PD pair", a router line cut short), how many, with
--   which statuses and paths, from when to when?
-- tables: request_errors, impact (requests, aborts, events)
-- columns:
--   ts        the first failed request or error record (UTC; NULL when none of them prints a time)
--   end_ts    the last one (UTC)
--   kind      failed_requests
--   role      the role that logged them (router: what clients saw; an engine: its own HTTP server)
--   host      NULL (one row per role, over hosts, as the impact query counts them)
--   ranks     [] (requests have no rank)
--   n         5xx answers plus ERROR records without a status
--   summary   the finding in words: counts, statuses with counts, span, method and paths, the router
--             errors' words
--   evidence  events.event_id of every record it counts
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per role with a failed request (rule "failed request", see request_errors). The
--   counts, statuses and span of the 5xx answers are the impact query's over the whole data, so the
--   summary's Impact line (the same query from the first finding on) never says fewer without saying why.
WITH i AS (SELECT * FROM impact WHERE failed > 0 OR errors > 0),
rec AS (SELECT * FROM request_errors WHERE role IN (SELECT role FROM i)),
g AS (
    SELECT role, min(ts) FILTER (WHERE failure = 'error_record') AS first_err_ts,
           max(ts) FILTER (WHERE failure = 'error_record') AS last_err_ts,
           string_agg(DISTINCT coalesce(method || ' ', '') || path, ', ' ORDER BY coalesce(method || ' ', '') || path) AS paths,
           string_agg(DISTINCT left(message, 120), '; ' ORDER BY left(message, 120)) AS messages,
           list(event_id ORDER BY ts NULLS FIRST, event_id) AS evidence
    FROM rec GROUP BY role
)
SELECT least(i.first_failed_ts, g.first_err_ts) AS ts, greatest(i.last_failed_ts, g.last_err_ts) AS end_ts,
       'failed_requests' AS kind, i.role, NULL::VARCHAR AS host, []::VARCHAR[] AS ranks,
       (i.failed + i.errors)::BIGINT AS n,
       'Failed requests' || CASE WHEN i.role <> 'unknown' THEN ' on ' || i.role ELSE '' END || ': '
       || concat_ws(' and ',
              CASE WHEN i.failed > 0 THEN i.failed || ' request(s) answered 5xx (' || i.statuses || ')' END,
              CASE WHEN i.errors > 0 THEN i.errors || ' ERROR record(s) without a status' END)
       || CASE WHEN least(i.first_failed_ts, g.first_err_ts) IS NULL THEN ' (no time read)'
               WHEN least(i.first_failed_ts, g.first_err_ts) = greatest(i.last_failed_ts, g.last_err_ts)
               THEN ' at ' || strftime(least(i.first_failed_ts, g.first_err_ts), '%Y-%m-%d %H:%M:%S UTC')
               ELSE ' from ' || strftime(least(i.first_failed_ts, g.first_err_ts), '%Y-%m-%d %H:%M:%S UTC')
                    || ' to ' || strftime(greatest(i.last_failed_ts, g.last_err_ts), '%H:%M:%S UTC') END
       || coalesce('; ' || g.paths, '')
       || coalesce('; errors: ' || g.messages, '') AS summary,
       g.evidence, 'request_errors (status >= 500; ERROR without a status), counted by impact' AS rests_on
FROM i LEFT JOIN g ON g.role IS NOT DISTINCT FROM i.role
ORDER BY ts NULLS LAST
