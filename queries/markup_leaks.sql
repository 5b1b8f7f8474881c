-- question: Which answers came back with tool-call markup as plain text (DeepSeek <｜tool▁calls▁begin｜>,
--   <｜DSML｜…>), on which engine, when, and how many requests were running on that engine then?
-- tables: request_concurrency (over request_log, batches)
-- columns:
--   ts                the Finish line's time (UTC)
--   host              host of the engine
--   role              the engine
--   rid               the request id
--   bootstrap_room    its room (PD), else NULL
--   markup_leak       the markup family: deepseek_tool_calls or deepseek_dsml
--   markup            the first markup token, as printed
--   running_req       requests running on the engine at its last batch line, summed over DP groups
--                     (NULL: no batch line within max_batch_age_s)
--   band              0-1, 2-4, 5-16, 17+ or unknown
--   batch_age_s       how old that batch line was, seconds
--   finish_type       stop, length, abort
--   completion_tokens tokens generated
--   event_id          events.event_id of the Finish line
--   source            its file or journal
--   source_pos        its position
-- parameters: none (max_batch_age_s of request_concurrency applies).
-- reading: one row per leaking answer, in time order. Only lines that hold the returned text
--   (--log-requests-level 2 or 3) can show a leak; markup_leak_rate says how many could. The markup
--   in a request's prompt (earlier tool calls rendered by the chat template) is not counted.
SELECT ts, host, role, rid, bootstrap_room, markup_leak, markup, running_req, band, batch_age_s,
       finish_type, completion_tokens, event_id, source, source_pos
FROM request_concurrency
WHERE markup_leak IS NOT NULL
ORDER BY ts, event_id
