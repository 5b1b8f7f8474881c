-- question: Which stops of batch progress are real (the input shows the process or its host alive in the
--   gap) and which are only gaps in the data; which real stops are wedges; did /health lie meanwhile?
-- tables: wedge, events, requests
-- columns:
--   ts        the stop: the role's last batch before the gap (UTC)
--   end_ts    the end of the gap: the next batch, else the end of the data (UTC)
--   kind      wedge (no batch on any rank with work waiting while other work went on), stop (no batch
--             while the input shows the process or its host alive), no_data (the input holds nothing in the
--             gap: a pause in the data, not a stop), health_lies (/health answered only 200 during a stop)
--   role      the role whose batches stopped
--   host      its host (of the last batch line)
--   ranks     the ranks that were advancing just before, e.g. [TP0, TP1]
--   n         batch lines of the other role during the gap (wedge, stop, no_data); /health answers (health_lies)
--   summary   the finding in words and numbers
--   evidence  events.event_id of the records it rests on: the last batch, the restart, the next batch
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per stop the wedge query finds (idle periods, and pauses that only precede a restart,
--   left out: finding_restart tells those), plus a health_lies row per
--   real stop during which /health kept answering 200. The input counts as alive in the gap when the
--   records of the same host (else the same source) inside it leave no silence of half the gap or more.
WITH stops AS (
    SELECT w.*, e.host AS stop_host, e.source AS stop_source,
           w.stopped_ts + to_microseconds(CAST(coalesce(w.stalled_s, 0) * 1e6 AS BIGINT)) AS gap_end
    FROM wedge w LEFT JOIN events e ON e.event_id = w.event_id
    WHERE w.verdict NOT LIKE 'idle%' AND w.verdict NOT LIKE 'restarted%'
),
inside AS (  -- the input's records in the gap, with the gap's two ends
    -- joined on the host (else the source) alone, the gap's bounds a filter: a join on equality reads
    -- each record once, where a join on the bounds sorted every record of the fleet. The stops' hosts
    -- are named first (IN): DuckDB then passes them to the scan, which skips the row groups of other
    -- hosts (joined to stops alone, whose size it guesses as that of events, it read every record)
    SELECT s.event_id AS stop_id, e.ts
    FROM stops s JOIN (SELECT host, ts FROM events WHERE host IN (SELECT stop_host FROM stops)) e
      ON e.host = s.stop_host
    WHERE e.ts > s.stopped_ts AND e.ts < s.gap_end
    UNION ALL
    SELECT s.event_id AS stop_id, e.ts
    FROM stops s JOIN events e ON e.source = s.stop_source
    WHERE s.stop_host IS NULL AND e.ts > s.stopped_ts AND e.ts < s.gap_end
    UNION ALL SELECT event_id, stopped_ts FROM stops
    UNION ALL SELECT event_id, gap_end FROM stops
),
silence AS (
    SELECT stop_id, max(gap_s) AS longest_s, count(*) - 2 AS records
    FROM (SELECT stop_id, epoch(ts) - epoch(lag(ts) OVER (PARTITION BY stop_id ORDER BY ts)) AS gap_s FROM inside)
    GROUP BY stop_id
),
judged AS (
    SELECT s.*, si.longest_s, si.records,
           si.records > 0 AND si.longest_s < 0.5 * greatest(s.stalled_s, 1e-6) AS alive,
           strftime(s.stopped_ts, '%Y-%m-%d %H:%M:%S UTC') AS t1, strftime(s.gap_end, '%Y-%m-%d %H:%M:%S UTC') AS t2
    FROM stops s JOIN silence si ON si.stop_id = s.event_id
),
rows AS (
    SELECT stopped_ts AS ts, gap_end AS end_ts,
           CASE WHEN NOT alive THEN 'no_data' WHEN verdict LIKE 'wedged%' THEN 'wedge' ELSE 'stop' END AS kind,
           role, stop_host AS host, rank_labels AS ranks, coalesce(other_role_batches, 0)::BIGINT AS n,
           CASE WHEN NOT alive THEN
                'No data from ' || t1 || ' to ' || t2 || ' (' || round(stalled_s)::BIGINT || ' s): ' || role
                || '''s batch lines stop at ' || t1 || ' and the input holds ' || records
                || ' record(s) of its ' || CASE WHEN stop_host IS NULL THEN 'input' ELSE 'host' END
                || ' in the gap (longest silence ' || round(longest_s)::BIGINT
                || ' s): a pause in the data, not a stop the data shows'
           ELSE
                upper(role[1]) || role[2:] || (CASE WHEN verdict LIKE 'wedged%' THEN ' wedged' ELSE ' stopped' END)
                || ' at ' || t1 || ': no batch on any of its ' || ranks_stopped || ' rank(s) ('
                || array_to_string(rank_labels, ', ') || ') for ' || round(stalled_s)::BIGINT || ' s with '
                || coalesce(running_req_at_stop, 0) || ' request(s) running'
                || CASE WHEN other_role_continued THEN ', while ' || other_role || ' went on ('
                        || other_role_batches || ' batch lines)' ELSE '' END
                || CASE WHEN health_kept_200 THEN ' and /health kept answering 200' ELSE '' END
                || CASE WHEN restart_ts IS NOT NULL
                        THEN '; restart at ' || strftime(restart_ts, '%H:%M:%S UTC') ELSE '; no restart in the data' END
           END AS summary,
           list_filter([event_id, restart_event_id, resumed_event_id], lambda x: x IS NOT NULL) AS evidence,
           'wedge (batch lines, other role, /health, restart) and the records of the same host in the gap' AS rests_on
    FROM judged
    UNION ALL
    SELECT stopped_ts, coalesce(restart_ts, gap_end), 'health_lies', role, stop_host, rank_labels,
           health_200::BIGINT,
           '/health of ' || role || ' answered 200 ' || health_200 || ' time(s) and never otherwise while it advanced'
           || ' no batch (' || t1 || ' to ' || strftime(coalesce(restart_ts, gap_end), '%H:%M:%S UTC') || ')',
           [event_id],
           'wedge.health_kept_200 (requests on /health of the role during the stop)'
    FROM judged WHERE alive AND health_kept_200
)
SELECT * FROM rows ORDER BY ts
