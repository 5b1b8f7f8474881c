-- question: Which KV transfer and bootstrap failures happened, by backend and cause (abort, timeout, peer
--   dead, routing conflict, the transfer worker's assertion, the backend's own error lines), as storms
--   with counts?
-- tables: transfer_errors, events
-- columns:
--   ts        the first failure of the group (UTC; NULL when the lines print no usable time)
--   end_ts    the last one (UTC)
--   kind      transfer_failures, bootstrap_failures or transfer_assertion (assert room in
--             self.transfer_infos, one row per room); findings.py adds abort_burst from incident_chain
--   role      role of the records (NULL for a burst over several roles)
--   host      host
--   ranks     the ranks that logged them, e.g. [TP0, TP1, TP3]
--   n         failure records in the group (with the notices folded into it)
--   summary   the finding in words: count, the record as printed ("Decode transfer failed"), rooms
--             (named when at most 3), cause, backend, span
--   evidence  events.event_id of every record it counts
--   rests_on  the tables and rule behind it
-- parameters: none.
-- reading: one row per (kind, role, host, error kind, cause, backend), an assertion row per room. A cause
--   of other_rank was propagated from the rank that failed first: not the root cause. When the parser
--   named no cause, or only the backend's error class (nixl_error), the cause is the exception as printed
--   (the traceback's last line, or the NIXL_ERR_* code); else it stays "not named".
--   Backend error lines (rule "backend line"): records the KV transfer library writes itself, with no
--   room: a glog E/F line from a transfer-engine source file (Mooncake's *transport*.cpp, rdma_*.cpp,
--   transfer_*.cpp, client_service.cpp; nixl_*.cpp) or from another file whose message names a transfer,
--   a segment or TRANSFER_FAIL (Mooncake store's client.cpp, store_py.cpp), a UCX ERROR line, a Python ERROR line from a KV
--   connector module (mooncake_*.py, nixl_*.py, kv_transfer*.py, *connector*.py), or SGLang's
--   "Session <peer> failed."; one transfer_failures row per (role, host), their causes counted: the
--   status code the line names (TRANSFER_FAIL, NIXL_ERR_*, UCS_ERR_*), else the message with its
--   addresses, keys and ids left out, cut at its first sentence, with the "Error: …" it prints.
--   Notices (rule "notice"): a record that says some transfers failed without naming which (SGLang's "Some
--   requests fail to receive KV Cache transfer done signal" and "Some requests timeout when bootstrapping",
--   Mooncake's "Sync batch data transfer timeout after Nns") is no finding of its own beside a failure it
--   is told with (same host, its role the same or unknown, within a minute; untimed: printed in the same
--   minute, events.printed_time) that names rooms or requests: it joins that finding's evidence, its words
--   and timeout are said after it ("beside it …"), and its cause is the finding's when the finding names
--   none ("(from the records beside it)"). A timeout names its seconds and KVPoll state when printed.
WITH t AS (
    SELECT *,
           CASE WHEN error_kind = 'assert_transfer_infos' THEN 'transfer_assertion'
                WHEN error_kind ILIKE '%bootstrap%' THEN 'bootstrap_failures' ELSE 'transfer_failures' END AS kind,
           concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS rank_label,
           CASE WHEN cause IS NULL OR cause = backend || '_error'
                THEN coalesce(left(nullif(trim(reason), ''), 160), cause) ELSE cause END AS said_cause,
           -- the record as printed: prefill_transfer_failed -> "Prefill transfer failed"
           regexp_replace(upper(left(error_kind, 1)) || replace(substr(error_kind, 2), '_', ' '), '\b(?i:nixl)\b', 'NIXL') AS words
    FROM transfer_errors x
    -- the time an untimed record prints without a year or a date (a notice is matched to a failure by it)
    LEFT JOIN (SELECT event_id, printed_time FROM records WHERE ts IS NULL AND printed_time IS NOT NULL) p USING (event_id)
),
tc AS (  -- a record of a request that names no cause takes the one its other records of that kind name
    SELECT * REPLACE (coalesce(said_cause, CASE WHEN coalesce(rid, request_id) IS NOT NULL
               THEN max(said_cause) OVER (PARTITION BY error_kind, coalesce(rid, request_id)) END) AS said_cause)
    FROM t
),
g AS (
    SELECT kind, role, host, error_kind, said_cause AS cause, backend, any_value(words) AS words,
           CASE WHEN kind = 'transfer_assertion' THEN bootstrap_room END AS room,
           min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           count(DISTINCT bootstrap_room) AS rooms,
           list_sort(list_distinct(list(bootstrap_room) FILTER (WHERE bootstrap_room IS NOT NULL))) AS room_list,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           -- SGLang's rid, else another component's request id (vLLM's NixlConnector names its own)
           list_sort(list_distinct(list(coalesce(rid, request_id)) FILTER (WHERE coalesce(rid, request_id) IS NOT NULL))) AS requests,
           list_sort(list_distinct(list(peer) FILTER (WHERE peer IS NOT NULL))) AS peers,
           list_sort(list_distinct(list(regexp_replace(peer, ':\d+$', '')) FILTER (WHERE peer IS NOT NULL))) AS peer_hosts,
           min(timeout_s) AS min_timeout_s, max(timeout_s) AS max_timeout_s, any_value(kv_poll_state) AS kv_poll_state,
           regexp_extract(min(printed_time), '^(?:\d\d-\d\d )?\d\d:\d\d') AS printed_minute,
           error_kind IN ('transfer_done_signal_missing', 'bootstrap_timeout_warning', 'batch_transfer_timeout') AS notice,
           list(event_id ORDER BY ts, event_id) AS evidence
    FROM tc GROUP BY kind, role, host, error_kind, said_cause, backend, CASE WHEN kind = 'transfer_assertion' THEN bootstrap_room END
),
gn AS (SELECT row_number() OVER (ORDER BY ts NULLS LAST, evidence[1]) AS gid, * FROM g),
fold AS (  -- each notice group and the failure group it is told beside: the first of the same host naming rooms or
           -- requests, its role the same or unknown, within a minute of it (untimed: printed in the same minute)
    SELECT n.gid AS notice, min(f.gid) AS target
    FROM gn n JOIN gn f
      ON n.notice AND NOT f.notice AND (f.rooms > 0 OR len(f.requests) > 0)
     AND f.host IS NOT DISTINCT FROM n.host
     AND (f.role IS NOT DISTINCT FROM n.role OR 'unknown' IN (coalesce(f.role, 'unknown'), coalesce(n.role, 'unknown')))
     AND CASE WHEN n.ts IS NOT NULL AND f.ts IS NOT NULL
              THEN n.ts <= f.end_ts + INTERVAL 60 SECOND AND n.end_ts >= f.ts - INTERVAL 60 SECOND
              WHEN n.ts IS NULL AND f.ts IS NULL THEN n.printed_minute <> '' AND n.printed_minute = f.printed_minute
              ELSE false END
    GROUP BY n.gid
),
told AS (  -- a failure group's notices: their records, cause and words
    SELECT x.target, flatten(list(n.evidence)) AS evidence, any_value(n.cause) FILTER (WHERE n.cause IS NOT NULL) AS cause,
           string_agg(n.n || ' "' || n.words || '" record(s) naming no request'
                      || coalesce(' (' || nullif(concat_ws('; ',
                             'after ' || printf('%g', round(n.min_timeout_s, 1))
                                 || CASE WHEN round(n.max_timeout_s, 1) > round(n.min_timeout_s, 1)
                                         THEN '-' || printf('%g', round(n.max_timeout_s, 1)) ELSE '' END || ' s',
                             nullif(array_to_string(n.ranks, ', '), '')), '') || ')', ''), ', ' ORDER BY n.gid) AS words
    FROM fold x JOIN gn n ON n.gid = x.notice
    GROUP BY x.target
),
gf AS (  -- the groups, a notice folded into the failure it is told beside (SGLang's "Some requests fail to receive KV
         -- Cache transfer done signal", batch14/01; Mooncake's "Sync batch data transfer timeout", batch14/03)
    SELECT f.* REPLACE (list_concat(f.evidence, coalesce(t.evidence, [])) AS evidence,
                        f.n + coalesce(len(t.evidence), 0) AS n,  -- the records it counts are those it cites
                        coalesce(f.cause, t.cause) AS cause),
           f.n AS n_said, f.cause IS NULL AND t.cause IS NOT NULL AS cause_told, t.words AS told
    FROM gn f LEFT JOIN told t ON t.target = f.gid
    WHERE f.gid NOT IN (SELECT notice FROM fold)
),
line AS (  -- backend error lines: the body after the glog / UCX / Python logger / SGLang header
    SELECT e.*,
           regexp_extract(e.message, '^\W{0,3}[EF]\d{4}(?:\d{4})? \d\d:\d\d:\d\d\.\d+\s+\d+ ([\w.-]+\.(?:cpp|cc|c|h)):\d+\]', 1) AS glog_file,
           regexp_matches(e.message, '\bUCX\s+(?:ERROR|FATAL)\b') AS ucx,
           regexp_extract(e.message, '\bERROR\b[^\[\n]*\[((?:mooncake|nixl|kv_transfer)\w*\.py|\w*connector\w*\.py):\d+\]', 1) AS py_file,
           regexp_matches(e.message, '^(?:\[[^\]\n]*\] )?Session \S+ failed\.?\s*$') AS session_failed
    FROM records e
    WHERE (e.level IN ('ERROR', 'CRITICAL', 'FATAL') OR e.message LIKE '%Session %failed%')  -- cheap first
      AND e.event_id NOT IN (SELECT event_id FROM transfer_errors)
),
b AS (
    SELECT *,
           -- the file that printed it, else the backend its own first line names (regexp_extract gives '', not NULL)
           -- (a glog file of UCX's own wrapper, ucx_utils.cpp under NIXL, is UCX's; another glog file is Mooncake's)
           CASE WHEN ucx OR glog_file ILIKE 'ucx\_%' ESCAPE '\' THEN 'UCX' WHEN concat(glog_file, py_file) ILIKE '%nixl%' THEN 'nixl'
                WHEN glog_file <> '' OR py_file ILIKE '%mooncake%' THEN 'mooncake'
                WHEN split_part(message, chr(10), 1) ILIKE '%nixl%' THEN 'nixl'
                WHEN split_part(message, chr(10), 1) ILIKE '%mooncake%' THEN 'mooncake' END AS backend,
           regexp_replace(trim(regexp_replace(split_part(message, chr(10), 1),
               '^\W{0,3}[EF]\d{4,8} \S+\s+\d+ \S+\] |^.*\bUCX\s+(?:ERROR|FATAL)\s+|^.*\bERROR\b[^\[\n]*\[\S+\.py:\d+\] |^\[[^\]\n]*\] ', '')),
               '[*`]+$', '') AS body,
           concat_ws(' ', 'DP' || dp_rank, 'PP' || pp_rank, 'TP' || tp_rank, 'EP' || ep_rank) AS rank_label
    FROM line
    WHERE (glog_file ~ '(?i)transport|transfer|client_service|nixl|mooncake|ucx|rdma_') OR ucx OR py_file <> '' OR session_failed
       -- a glog error of another file of the library that names what failed: a transfer, a segment, TRANSFER_FAIL
       OR (glog_file <> '' AND regexp_matches(split_part(message, chr(10), 1), '(?i)\btransfer\b|\bsegment\b|TRANSFER_FAIL'))
),
bc AS (
    SELECT *,
           coalesce(nullif(regexp_extract(body, '\b(TRANSFER_FAIL|NIXL_ERR_\w+|UCS_ERR_\w+)\b', 1), ''),
                    trim(regexp_replace(regexp_replace(body,
                        '''[^'']*''|"[^"]*"|\[[^\]]*\]|\S*@\S*|\S*0x[0-9a-fA-F]+\S*|\S*[0-9a-fA-F-]{16,}\S*|\b\d+(?:\.\d+){3}(?::\d+)?\S*', '…', 'g'),
                        '(\. |,|\.$).*$', ''))
                    || coalesce(': ' || nullif(trim(regexp_extract(body, '(?:Exception|Error): ([^(,*`]+)', 1)), ''), '')) AS cause
    FROM b
),
bg AS (
    SELECT role, host, min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           list_sort(list_distinct(list(backend) FILTER (WHERE backend IS NOT NULL))) AS backends,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           count(*) FILTER (WHERE rank_label <> '') AS with_rank,
           list(event_id ORDER BY ts, event_id) AS evidence
    FROM bc GROUP BY ALL
),
bcause AS (
    SELECT role, host, string_agg(cause || ' ×' || n, '; ' ORDER BY n DESC, cause) AS causes
    FROM (SELECT role, host, cause, count(*) AS n FROM bc GROUP BY ALL) GROUP BY ALL
)
SELECT ts, end_ts, kind, role, host, ranks, n,
       CASE WHEN kind = 'transfer_assertion' THEN
            'Transfer worker assertion for room ' || room || ': `assert room in self.transfer_infos` on ' || role
            || ' ' || array_to_string(ranks, ', ') || ' at ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC')
            || coalesce(' (' || backend || ')', '')
       ELSE
            n_said || ' "' || words || '" record(s)'
            -- an unknown role is left out, never worded
            || coalesce(' on ' || nullif(concat_ws(' ', nullif(role, 'unknown'), nullif(array_to_string(ranks, ', '), '')), ''), '')
            || coalesce(' from ' || strftime(ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(end_ts, '%H:%M:%S UTC'), ' (no time read)')
            || ', ' || rooms || ' room(s)'
            || CASE WHEN rooms BETWEEN 1 AND 3 THEN ' (' || array_to_string(room_list, ', ') || ')' ELSE '' END
            || CASE WHEN rooms = 0 AND len(requests) BETWEEN 1 AND 3 THEN ', request ' || array_to_string(requests, ', ') ELSE '' END
            || CASE WHEN len(peers) BETWEEN 1 AND 3 THEN ', peer ' || array_to_string(peers, ', ')
                    -- many ports of a few hosts (a transfer engine's targets and segments): the hosts
                    WHEN len(peer_hosts) BETWEEN 1 AND 3 THEN ', peer ' || array_to_string(peer_hosts, ', ') || ' (' || len(peers) || ' ports)'
                    ELSE '' END
            || '; cause ' || coalesce(cause, 'not named') || CASE WHEN cause = 'other_rank' THEN ' (propagated: not the root cause)' ELSE '' END
            -- the timeout the records print: "timed out after 600.0s in KVPoll.WaitingForInput"
            || CASE WHEN cause = 'timeout' AND NOT cause_told AND max_timeout_s IS NOT NULL
                    THEN ' after ' || printf('%g', round(min_timeout_s, 1))
                         || CASE WHEN round(max_timeout_s, 1) > round(min_timeout_s, 1) THEN '-' || printf('%g', round(max_timeout_s, 1)) ELSE '' END
                         || ' s' || coalesce(' in KVPoll.' || kv_poll_state, '')
                    ELSE '' END
            || CASE WHEN cause_told THEN ' (from the records beside it)' ELSE '' END
            || '; backend ' || coalesce(backend, 'not named')
            || coalesce('; beside it ' || told, '')
       END AS summary,
       evidence,
       'transfer_errors (error_kind, cause, backend' || CASE WHEN told IS NOT NULL THEN '; a notice naming no request folded in' ELSE '' END || ')' AS rests_on
FROM gf
UNION ALL BY NAME
SELECT g.ts, g.end_ts, 'transfer_failures' AS kind, g.role, g.host, g.ranks, g.n,
       g.n || ' KV transfer backend error record(s)'
       -- an unknown role is left out, never worded
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(g.role, 'unknown'), nullif(array_to_string(g.ranks, ', '), '')), ''), '')
       || CASE WHEN g.with_rank BETWEEN 1 AND g.n - 1 THEN ' (' || g.with_rank || ' of the ' || g.n || ' print a rank)' ELSE '' END
       || coalesce(' from ' || strftime(g.ts, '%Y-%m-%d %H:%M:%S UTC') || ' to ' || strftime(g.end_ts, '%H:%M:%S UTC'), ' (no time read)')
       || ', no room read; backend ' || coalesce(nullif(array_to_string(g.backends, ', '), ''), 'not named')
       || '; cause ' || c.causes AS summary,
       g.evidence, 'events (backend line: glog E/F of a transfer-engine file, UCX ERROR, KV connector ERROR, Session … failed)' AS rests_on
FROM bg g JOIN bcause c ON c.role IS NOT DISTINCT FROM g.role AND c.host IS NOT DISTINCT FROM g.host
ORDER BY ts NULLS LAST
