-- question: What did systemd say about each unit: when it started and stopped, how its main process
--   ended, whether systemd restarted it (a crash loop counts up the restart counter)?
-- tables: lifecycle
-- columns:
--   host              host of the unit
--   unit              the systemd unit (sglang-decode.service …)
--   role              prefill, decode, router, engine or unknown
--   starts            "Started" messages
--   stops             "Stopped" messages
--   exits             "Main process exited" messages
--   crashes           exits by a signal or a core dump (code=killed or code=dumped), and exits with a non-zero status
--   restarts_scheduled "Scheduled restart job" messages (Restart= in the unit)
--   max_restart_counter the highest restart counter systemd printed (NULL when none)
--   first_ts          first lifecycle message (UTC)
--   last_ts           last lifecycle message (UTC)
--   last_exit_ts      the last "Main process exited" (UTC)
--   last_exit         its "code=…, status=…", e.g. "killed, 9/KILL"
--   last_result       the last "Failed with result" ('exit-code', 'signal', 'core-dump', 'timeout' …)
--   event_id          events.event_id of the last exit (else of the first message)
--   source            file or journal of that record
--   source_pos        line number or journal cursor of that record
-- parameters: none.
-- reading: one row per (host, unit). crashes > 0 or restarts_scheduled > 0 means the unit died and
--   came back: the report's chain then has a restart even without batch lines. An operator's
--   "systemctl restart" shows stops and starts without exits of a crash. Empty: no systemd message
--   about a unit in the data (a plain log file, container logs).
SELECT host, unit, any_value(role ORDER BY ts) AS role,
       count(*) FILTER (WHERE event = 'started') AS starts,
       count(*) FILTER (WHERE event = 'stopped') AS stops,
       count(*) FILTER (WHERE event = 'exited') AS exits,
       count(*) FILTER (WHERE event = 'exited' AND (code IN ('killed', 'dumped')
                                                    OR (code = 'exited' AND NOT starts_with(status, '0')))) AS crashes,
       count(*) FILTER (WHERE event = 'restart_scheduled') AS restarts_scheduled,
       max(restart_counter) AS max_restart_counter,
       min(ts) AS first_ts, max(ts) AS last_ts,
       max(ts) FILTER (WHERE event = 'exited') AS last_exit_ts,
       arg_max(code || ', ' || status, (ts, event_id)) FILTER (WHERE event = 'exited') AS last_exit,
       arg_max(result, (ts, event_id)) FILTER (WHERE event = 'failed') AS last_result,
       coalesce(arg_max(event_id, (ts, event_id)) FILTER (WHERE event = 'exited'), arg_min(event_id, (ts, event_id))) AS event_id,
       coalesce(arg_max(source, (ts, event_id)) FILTER (WHERE event = 'exited'), arg_min(source, (ts, event_id))) AS source,
       coalesce(arg_max(source_pos, (ts, event_id)) FILTER (WHERE event = 'exited'), arg_min(source_pos, (ts, event_id))) AS source_pos
FROM lifecycle
WHERE NOT starts_with(event, 'server_')  -- the engine's own words: systemd's view only here
GROUP BY host, unit
ORDER BY first_ts NULLS LAST, unit
