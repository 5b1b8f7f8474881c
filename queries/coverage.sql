-- question: What evidence does the data hold per role and per rank, and what is missing (a role not
--   ingested, a rank without batch lines or without a py-spy capture, an input read with errors)?
-- tables: processes, batches, captures, requests, sources (its clock columns)
-- columns:
--   scope          role (one row per expected role: prefill, decode, router; engine and unknown when
--                  the data holds them), rank (one per engine rank seen), or source (an input with
--                  errors or unparsed records)
--   role           prefill, decode, router, engine (not half of a PD pair), unknown (NULL for a source row)
--   host           host of the rank (NULL on role and source rows)
--   rank_label     e.g. "TP2" (rank rows)
--   tp_rank        TP rank (rank rows)
--   events         records of this role or rank
--   batches        batch lines
--   captures       py-spy captures (main threads; a capture without role or host takes those its pid
--                  logged with)
--   requests       router or HTTP access lines
--   first_ts       first record (UTC)
--   last_ts        last record (UTC)
--   missing        what is absent, ";"-separated, NULL when nothing is; for a source: its errors;
--                  for a clock row: "zone not printed" or "two clocks …"
--   source         the input (source and clock rows)
--   clock          clock rows: "UTC" (records whose time has a known zone) or "zone not printed"
--                  (times printed without a zone, taken as printed); NULL on other rows
--   offset_s       clock rows: seconds the header's time of a record is ahead of the other stamp
--                  the same record carries (sources.clock_offset_s), NULL when none differ
--   zone_offset_s  "zone not printed" clock rows: seconds that clock is ahead of UTC, from neighbouring
--                  records of the two clocks a time zone's step apart (sources.zone_offset_s), else NULL
-- parameters: none.
-- reading: a role row with events 0 means that role was not ingested (for the router: no router
--   record read as its), so nothing can be said about it; a rank with no capture cannot be placed in a stuck-stack
--   group; a rank with no batches has no last batch. The report lists these under "what the data
--   cannot say". Roles are the tables' own (logcorr/roles.py): the router row is always there; the
--   prefill and decode rows too, unless every engine in the data is one that is not half of a PD
--   pair (role engine), which then has its row instead. So on empty tables the answer is "no record
--   read as the prefill engine's", "… the decode engine's", "no record read as the router's" (what
--   logcorr attributed, not what the text holds: a router line whose role was not read is not one). Clock rows
--   (one per input and clock) give the span of each clock: times of two clocks, or of a clock whose
--   zone is not printed, cannot be put in one order with the others; offset_s a whole number of
--   quarter hours is one clock printed in two zones.
WITH ev AS (
    -- the records per rank, per role, and per (pid, role, host), from the per-process summary that
    -- ingest writes (its records add up to count(*) of events; its times to their min and max)
    SELECT role, host, dp_rank, pp_rank, tp_rank, ep_rank, pid,
           GROUPING(host, dp_rank, pp_rank, tp_rank, ep_rank, pid) AS g,
           sum(records) AS events, min(first_ts) AS first_ts, max(last_ts) AS last_ts
    FROM processes
    GROUP BY GROUPING SETS ((role, host, dp_rank, pp_rank, tp_rank, ep_rank), (role), (pid, role, host))
),
ranks AS (
    SELECT role, host, dp_rank, pp_rank, tp_rank, ep_rank, events, first_ts, last_ts
    FROM ev
    WHERE g = 1 AND role IN ('prefill', 'decode', 'engine')  -- 1: pid rolled up only
      AND (tp_rank IS NOT NULL OR dp_rank IS NOT NULL OR pp_rank IS NOT NULL OR ep_rank IS NOT NULL)
),
rank_batches AS (
    SELECT role, host, dp_rank, pp_rank, tp_rank, ep_rank, count(*) AS n FROM batches GROUP BY ALL
),
pid_role AS (
    -- a capture from a bare py-spy file may lack role and host: take those its pid logged with
    SELECT pid, any_value(role) AS role, any_value(host) AS host FROM ev
    WHERE g = 30 AND role IN ('prefill', 'decode', 'engine') AND pid IS NOT NULL AND pid > 1  -- 30: the ranks rolled up
    GROUP BY pid HAVING count(DISTINCT role) = 1 AND count(DISTINCT host) <= 1
),
rank_captures AS (
    SELECT coalesce(c.role, p.role) AS role, coalesce(c.host, p.host) AS host,
           c.dp_rank, c.pp_rank, c.tp_rank, c.ep_rank, count(DISTINCT c.capture_id) AS n,
           count(DISTINCT c.capture_id) FILTER (WHERE c.capture_ts IS NOT NULL) AS timed
    FROM captures AS c LEFT JOIN pid_role AS p ON p.pid = c.pid
    WHERE coalesce(c.is_main, c.thread_name = 'MainThread', false) OR c.thread_id = c.pid
    GROUP BY ALL
),
rank_rows AS (
    SELECT 'rank' AS scope, r.role, r.host,
           concat_ws(' ', 'DP' || r.dp_rank, 'PP' || r.pp_rank, 'TP' || r.tp_rank, 'EP' || r.ep_rank) AS rank_label,
           r.tp_rank, r.events, coalesce(b.n, 0) AS batches, coalesce(c.n, 0) AS captures, 0 AS requests,
           r.first_ts, r.last_ts,
           nullif(concat_ws('; ',
               CASE WHEN coalesce(b.n, 0) = 0 THEN 'no batch lines' END,
               CASE WHEN coalesce(c.n, 0) = 0 THEN 'no py-spy capture' END,
               CASE WHEN c.n > 0 AND c.timed = 0 THEN 'py-spy capture without capture time' END), '') AS missing,
           NULL AS source,
           r.dp_rank, r.pp_rank, r.ep_rank
    FROM ranks AS r
    LEFT JOIN rank_batches AS b
      ON b.role = r.role AND b.host IS NOT DISTINCT FROM r.host AND b.dp_rank IS NOT DISTINCT FROM r.dp_rank
     AND b.pp_rank IS NOT DISTINCT FROM r.pp_rank AND b.tp_rank IS NOT DISTINCT FROM r.tp_rank
     AND b.ep_rank IS NOT DISTINCT FROM r.ep_rank
    LEFT JOIN rank_captures AS c
      ON c.role = r.role AND c.dp_rank IS NOT DISTINCT FROM r.dp_rank
     AND c.pp_rank IS NOT DISTINCT FROM r.pp_rank AND c.tp_rank IS NOT DISTINCT FROM r.tp_rank
     AND c.ep_rank IS NOT DISTINCT FROM r.ep_rank
     AND (c.host IS NULL OR r.host IS NULL OR c.host = r.host)
),
roles AS (
    -- the router always; prefill and decode unless every engine is one that is not half of a PD
    -- pair; that engine, and records of no known role, when the data holds them
    SELECT 'router' AS role
    UNION ALL
    SELECT unnest(['prefill', 'decode']) FROM (SELECT 1)
    WHERE NOT EXISTS (SELECT 1 FROM ev WHERE g = 63 AND role = 'engine')
       OR EXISTS (SELECT 1 FROM ev WHERE g = 63 AND role IN ('prefill', 'decode'))
    UNION ALL
    SELECT role FROM ev WHERE g = 63 AND role IN ('engine', 'unknown')
),
role_rows AS (
    SELECT 'role' AS scope, ro.role, NULL AS host, NULL AS rank_label, NULL::SMALLINT AS tp_rank,
           coalesce(e.n, 0) AS events, coalesce(b.n, 0) AS batches, coalesce(c.n, 0) AS captures,
           coalesce(q.n, 0) AS requests, e.first_ts, e.last_ts,
           nullif(concat_ws('; ',
               CASE WHEN coalesce(e.n, 0) = 0 THEN
                   CASE ro.role WHEN 'router' THEN 'no record read as the router''s' ELSE 'no record read as the ' || ro.role || ' engine''s' END
               END,
               CASE WHEN ro.role = 'unknown' THEN 'no role read: logcorr found no unit, pod or host name, process, input or text cue it knows'
                    || coalesce('; their text mentions ' || (
                           SELECT string_agg(w || ' in ' || k, ', ' ORDER BY w) FROM (
                               SELECT w, count(*) AS k FROM events, unnest(['decode', 'prefill', 'router']) AS t(w)
                               WHERE role = 'unknown' AND contains(lower(message), w) GROUP BY w))
                           || ' (words logcorr did not read as a role)', '') END,
               CASE WHEN coalesce(e.n, 0) > 0 AND ro.role NOT IN ('router', 'unknown') AND coalesce(b.n, 0) = 0 THEN 'no batch lines' END,
               CASE WHEN coalesce(e.n, 0) > 0 AND ro.role NOT IN ('router', 'unknown') AND coalesce(c.n, 0) = 0 THEN 'no py-spy capture' END,
               CASE WHEN coalesce(e.n, 0) > 0 AND ro.role NOT IN ('router', 'unknown') AND coalesce(h.n, 0) = 0 THEN
                   CASE WHEN hu.n > 0 THEN 'no /health lines of its own (' || hu.n || ' /health line(s) have no role logcorr could read)'
                        ELSE 'no /health lines' END
               END,
               CASE WHEN coalesce(e.n, 0) > 0 AND ro.role = 'router' AND coalesce(q.n, 0) = 0 THEN 'no router request lines' END
           ), '') AS missing,
           NULL AS source,
           NULL::SMALLINT AS dp_rank, NULL::SMALLINT AS pp_rank, NULL::SMALLINT AS ep_rank
    FROM roles AS ro
    LEFT JOIN (SELECT role, events AS n, first_ts, last_ts FROM ev WHERE g = 63) AS e USING (role)
    LEFT JOIN (SELECT role, count(*) AS n FROM batches GROUP BY role) AS b USING (role)
    LEFT JOIN (SELECT role, sum(n) AS n FROM rank_captures GROUP BY role) AS c USING (role)
    LEFT JOIN (SELECT role, count(*) AS n FROM requests GROUP BY role) AS q USING (role)
    LEFT JOIN (SELECT role, count(*) AS n FROM requests WHERE path LIKE '/health%' GROUP BY role) AS h USING (role)
    CROSS JOIN (SELECT count(*) AS n FROM requests WHERE path LIKE '/health%' AND role = 'unknown') AS hu
),
source_rows AS (
    SELECT 'source' AS scope, NULL AS role, NULL AS host, NULL AS rank_label, NULL::SMALLINT AS tp_rank,
           records AS events, 0 AS batches, 0 AS captures, 0 AS requests, first_ts, last_ts,
           nullif(concat_ws('; ', replace(errors, chr(10), '; '),
                            CASE WHEN unparsed > 0 THEN unparsed || ' records of unknown shape' END), '') AS missing,
           source,
           NULL::SMALLINT AS dp_rank, NULL::SMALLINT AS pp_rank, NULL::SMALLINT AS ep_rank
    FROM sources
    WHERE errors IS NOT NULL OR records = 0
),
clock_rows AS (
    -- per input, the span of each clock its records' times come from, and two stamps in one record
    SELECT 'clock' AS scope, NULL AS role, NULL AS host, NULL AS rank_label, NULL::SMALLINT AS tp_rank,
           c.events, 0 AS batches, 0 AS captures, 0 AS requests, c.first_ts, c.last_ts,
           nullif(concat_ws('; ',
               CASE WHEN c.clock = 'zone not printed' THEN 'zone not printed: ' || c.events
                   || ' record(s) carry only a time printed without a zone, taken as printed (not UTC)' END,
               CASE WHEN c.offset_s IS NOT NULL THEN 'two clocks: ' || c.offset_records
                   || ' record(s) carry two stamps ' || c.offset_s || ' s apart'
                   || CASE WHEN abs(c.offset_s) >= 899 AND abs(c.offset_s - round(c.offset_s / 900) * 900) <= 1
                           THEN ' (a whole time zone: one clock printed in two zones)' ELSE '' END END), '') AS missing,
           c.source, c.clock, c.offset_s, c.zone_offset_s,
           NULL::SMALLINT AS dp_rank, NULL::SMALLINT AS pp_rank, NULL::SMALLINT AS ep_rank
    FROM (
        SELECT source, 'UTC' AS clock, zoned AS events, zoned_first_ts AS first_ts, zoned_last_ts AS last_ts,
               CASE WHEN zoneless = 0 THEN clock_offset_s END AS offset_s, clock_offset_records AS offset_records,
               NULL::DOUBLE AS zone_offset_s
        FROM sources WHERE zoned > 0
        UNION ALL
        SELECT source, 'zone not printed', zoneless, zoneless_first_ts, zoneless_last_ts,
               clock_offset_s, clock_offset_records, zone_offset_s
        FROM sources WHERE zoneless > 0
    ) AS c
)
SELECT scope, role, host, rank_label, tp_rank, events::BIGINT AS events, batches::BIGINT AS batches,
       captures::BIGINT AS captures, requests::BIGINT AS requests, first_ts, last_ts, missing, source,
       clock, offset_s::DOUBLE AS offset_s, zone_offset_s::DOUBLE AS zone_offset_s
FROM (
    SELECT * FROM role_rows
    UNION ALL BY NAME SELECT * FROM rank_rows
    UNION ALL BY NAME SELECT * FROM source_rows
    UNION ALL BY NAME SELECT * FROM clock_rows
)
ORDER BY CASE scope WHEN 'role' THEN 0 WHEN 'rank' THEN 1 WHEN 'source' THEN 2 ELSE 3 END,
         CASE role WHEN 'prefill' THEN 0 WHEN 'decode' THEN 1 WHEN 'engine' THEN 2 WHEN 'router' THEN 3 ELSE 4 END,
         host, dp_rank, pp_rank, tp_rank, ep_rank, source, clock
