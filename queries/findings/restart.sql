-- question: Which units or engines restarted, and which of them loop (systemd's restart counter, repeated
--   crashes, the HTTP server started again and again)?
-- tables: unit_lifecycle, lifecycle
-- columns:
--   ts        the unit's first lifecycle message in the data (UTC)
--   end_ts    its last one (UTC)
--   kind      crash_loop (three or more crashes, scheduled restarts or a restart counter of 3 or more) or
--             restart (stopped or crashed, then started again)
--   role      the unit's role
--   host      host
--   ranks     empty (a unit holds every rank of its engine)
--   n         restarts: scheduled restarts, else starts after a stop
--   summary   the finding in words: unit, crashes, how it ended, restarts, restart counter
--   evidence  events.event_id of the unit's last exit (else its first message) and of its lifecycle records
--   rests_on  the tables behind it
-- parameters: none.
-- reading: one row per (host, unit) whose lifecycle shows a crash, a scheduled restart, or a stop and a
--   start; a unit without a systemd name (a container, a plain log) is named by the HTTP server's start
--   lines: two or more "Started server process" of one role and host count as restarts.
WITH u AS (
    SELECT host, unit, role, starts, stops, crashes, restarts_scheduled, max_restart_counter, first_ts, last_ts,
           last_exit, last_result, event_id
    FROM unit_lifecycle
    UNION ALL
    SELECT host, NULL, role, count(*) FILTER (WHERE event = 'server_started'),
           count(*) FILTER (WHERE event IN ('server_stopping', 'server_stopped')), 0, 0, NULL, min(ts), max(ts),
           NULL, NULL, min(event_id)
    FROM lifecycle WHERE unit IS NULL GROUP BY host, role
),
picked AS (
    SELECT *, greatest(coalesce(restarts_scheduled, 0), coalesce(max_restart_counter, 0), coalesce(crashes, 0)) AS loop_n
    FROM u
    WHERE crashes > 0 OR restarts_scheduled > 0 OR (starts > 0 AND stops > 0) OR (unit IS NULL AND starts >= 2)
)
SELECT p.first_ts AS ts, p.last_ts AS end_ts,
       CASE WHEN loop_n >= 3 THEN 'crash_loop' ELSE 'restart' END AS kind,
       p.role, p.host, CAST([] AS VARCHAR[]) AS ranks,
       (CASE WHEN restarts_scheduled > 0 THEN restarts_scheduled
             WHEN unit IS NULL THEN starts - 1 ELSE least(starts, stops) END)::BIGINT AS n,
       CASE WHEN loop_n >= 3 THEN 'Crash loop: ' ELSE 'Restart: ' END
       -- a unit's role in brackets only when it is known (never "(unknown)")
       || coalesce(p.unit, p.role || ' HTTP server')
       || CASE WHEN p.role <> 'unknown' THEN ' (' || p.role || ')' ELSE '' END
       || CASE WHEN crashes > 0 THEN ' crashed ' || crashes || ' time(s)' || coalesce(' (last: ' || last_exit || ')', '')
               ELSE ' stopped ' || stops || ' time(s) without a crash' END
       || CASE WHEN restarts_scheduled > 0 THEN ', systemd scheduled ' || restarts_scheduled || ' restart(s)' ELSE '' END
       || coalesce(', restart counter up to ' || max_restart_counter, '')
       || ', started ' || starts || ' time(s)'
       -- a journal's short lines without a year have no UTC time: their times are quoted as printed
       -- (events.printed_time), never called absent (batch14/08)
       || coalesce(', from ' || strftime(first_ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(last_ts, '%H:%M:%S UTC'),
                   (SELECT ', printed without a year: ' || min(e.printed_time) || ' to ' || max(e.printed_time)
                    FROM lifecycle l JOIN records e USING (event_id)
                    WHERE l.host IS NOT DISTINCT FROM p.host AND l.unit IS NOT DISTINCT FROM p.unit
                      AND e.printed_time LIKE '__-__ %'),
                   ' (its records print no usable time)') AS summary,
       list_filter([p.event_id], lambda x: x IS NOT NULL)
       || (SELECT coalesce(list(l.event_id ORDER BY l.ts), [])
           FROM lifecycle l WHERE l.host IS NOT DISTINCT FROM p.host AND l.unit IS NOT DISTINCT FROM p.unit
             AND l.event_id <> p.event_id) AS evidence,
       'unit_lifecycle (systemd messages) and lifecycle (HTTP server start lines)' AS rests_on
FROM picked p
ORDER BY ts NULLS LAST
