-- question: Which records carry an error level or a crash or failure marker that no other finding cites,
--   so that the report never says "no failure" beside them?
-- tables: events, tracebacks, watchdogs, transfer_errors, cited (the other findings' rows)
-- columns:
--   ts        the first such record (UTC; NULL when none prints a time logcorr read)
--   end_ts    the last one (UTC)
--   kind      unexplained_crash (its records carry a crash marker or an exception: grades 1-2 below)
--             or unexplained_errors (the rest: grades 3-5)
--   role      the role of the records when they share one, else unknown
--   host      host
--   ranks     the ranks the records print (or inherit), e.g. [TP1, rank 7]
--   n         records in the group
--   summary   the most severe record quoted (its marker line, cut at 160 characters), or, for a
--             traceback whose exception was read, that exception (tracebacks.exception and exc_message)
--             and the innermost frame it was raised in, with its rank and time as read, then the count by
--             severity and by role and rank as read, then the last record printed quoted (when not the first)
--   evidence  events.event_id of the records, the most severe first
--   rests_on  the rule behind it
-- parameters: none.
-- reading: one row per (host, kind). A record counts when no other finding cites it, nor a record its
--   process printed at the same instant (a traceback stamped line by line), and it is one of, most
--   severe first: (1) a crash marker in its text (Fatal Python error, Segmentation fault or Segfault,
--   SIGSEGV/SIGABRT/SIGBUS/SIGILL, core dumped, terminate called, an exit code -N, "crashed" in a log record (not in prose), glibc's
--   abort on a broken heap: free(): invalid …, double free, malloc(): …, corrupted size; the kernel's OOM
--   killer's `Out of memory: Killed process N`; Triton's `Signal (N) received.` at a line's start); (2) an
--   exception: a tracebacks row, a `Type: message` whose type ends in Error or Exception (or is Exception; its
--   message may start on the next line, quoted with it), or a Python
--   traceback's `File "…", line N, in f` frame (a tail whose exception line was cut), or, in a record no
--   parser typed, fragments of frames with none intact (`File "` and `, line N` apart: dumps of several
--   processes written at once; said to tell nothing of what failed), or native stack frames without their
--   message (c10's `frame #N: f + 0x… (0x… in lib)`, Open MPI's `[host:pid] [ N] lib(f+0x…)[0x…]`; said
--   alike); (3) a watchdogs
--   or transfer_errors row, or a log record saying "timed out" or that a watchdog fired, or a DeepEP kernel's
--   timeout (printed bare, no header); (4) a level ERROR, CRITICAL, FATAL, E or F (any case), or NCCL's WARN
--   (`host:pid:tid [dev] file:line NCCL WARN …`: NCCL prints its failures at WARN), or an API client's failed
--   call as the OpenAI Python SDK prints it (`Error code: 400 - {…}`, with or without a time), or a chat
--   completion's message (an assistant's, or one with reasoning_content) whose text holds tool-call markup
--   (DeepSeek's, DSML, Kimi-K2's: the call came back as text); (5) a log record whose words say failed, failure or
--   error, out of memory (OOM), or SGLang's error that an output came for a request whose state was
--   deleted (printed without a level by its default format), not on a line saying its error is ignored
--   (SGLang's `Ignore import error when loading …`). A log record is one with a time (also one printed without a year: events.printed_time) or a level read, not at INFO, DEBUG, TRACE or NOTICE (its
--   logger called it routine): prose and routine lines carry no marker of grade 3 or 5. py-spy
--   records, metrics, spans and batch lines carry none, nor lines that are a comment (`#` first), nor
--   a collector's step records (unit logcorr-collect: a py-spy dump refused, a journal empty), which
--   the report's section on the collection states, nor the watchdog's dump of the running batch beside
--   a py-spy dump read at its instant. A reporter's lead-in to a pasted block (one line
--   of prose ending with a colon, no time, level or kind read) counts in no grade: its words tell of the log.
--   Ranks are those the records print or inherit; the summary counts them by role and rank as read.
WITH cited_ids AS (SELECT DISTINCT unnest(evidence) AS event_id FROM cited),
cited_at AS (  -- the process and instant of each cited record: a record printed with it is part of it
    SELECT DISTINCT e.host, e.pid, e.ts FROM records e JOIN cited_ids USING (event_id)
    WHERE e.pid IS NOT NULL AND e.ts IS NOT NULL
),
marked AS (
    SELECT e.event_id, e.ts, e.printed_time, e.role, e.host, e.level, e.message, e.kind,
           concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank) AS rank_label,
           regexp_replace(coalesce(e.message, ''), '(?m)^\s*#.*$', '', 'g') AS text,
           -- a log record (a time, also one printed without a year, or a level read) whose logger did
           -- not call it routine: words of failure in prose, or at INFO/DEBUG, are no error
           (e.ts IS NOT NULL OR e.printed_time IS NOT NULL OR e.level IS NOT NULL)
             AND upper(coalesce(e.level, '')) NOT IN ('INFO', 'I', 'DEBUG', 'D', 'TRACE', 'NOTICE') AS logged,
           t.event_id IS NOT NULL AS is_traceback,
           t.exception, t.exc_message, t.function AS frame_function, t.file AS frame_file, t.line AS frame_line,
           -- a traceback printed inside a string, its line ends escaped (a benchmark client's `output.error='Traceback
           -- …\n  File "…", line 93, in connection_lost\n …'`, sglang#6701, batch25/11): its innermost frame as
           -- parsed is quoted, not the whole line; cut, the exception of its earlier chained part is what it was raised
           -- while handling (the last `Type: message` before the last "The above exception …" lead)
           t.event_id IS NOT NULL AND regexp_matches(coalesce(e.message, ''), '\\n {2}File "[^"\n]*", line \d+, in ') AS escaped_tb,
           CASE WHEN t.exception IS NULL THEN
             nullif(list_last(regexp_extract_all(
                 regexp_extract(coalesce(t.traceback, ''), '(?s)^(.*)\n(During handling of the above exception, another exception occurred|The above exception was the direct cause of the following exception):[ \t]*\n', 1),
                 '(?m)^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:: [^\n]*)?)$', 1)), '')
           END AS tb_cause,
           -- the message a logger printed above its traceback at an error or warning level (logger.exception's
           -- line: Ray Serve's "ERROR … -- Exception in Replica(…), the replica will be stopped.", batch21/03);
           -- a line without one that a traceback was joined to is no word of it (batch18/08's "[2025-06-04
           -- 17:51:38] Register aux tensors, …" above the HTTP server's traceback: SGLang prints no level)
           CASE WHEN upper(coalesce(e.level, '')) IN ('ERROR', 'ERR', 'CRITICAL', 'CRIT', 'FATAL', 'E', 'F', 'WARNING', 'WARN', 'W')
                THEN t.lead END AS tb_lead,
           e.event_id IN (SELECT event_id FROM watchdogs) AS is_watchdog,
           -- a parent's report that a child failed (SGLang's "Received sigquit from a child process", a dead
           -- subprocess) is a watchdogs row too, but no watchdog or timeout: counted under its own words (batch23/01)
           e.event_id IN (SELECT event_id FROM watchdogs WHERE watchdog_kind IN ('sigquit', 'subprocess_crashed')) AS is_child_report,
           e.event_id IN (SELECT event_id FROM transfer_errors) AS is_transfer_error
    FROM records e LEFT JOIN tracebacks t ON t.event_id = e.event_id
    WHERE e.kind NOT IN ('batch', 'pyspy', 'metric', 'span', 'request_received', 'request_finished', 'req_time_stats')
      AND e.unit IS DISTINCT FROM 'logcorr-collect'  -- a collector's own steps: the probes section's
      AND e.event_id NOT IN (SELECT event_id FROM cited_ids)
      AND NOT EXISTS (SELECT 1 FROM cited_at c
                      WHERE c.pid = e.pid AND c.ts = e.ts AND c.host IS NOT DISTINCT FROM e.host)
      -- the watchdog's dump of the running batch (a watchdogs row debug_info) is a state dump, not an error,
      -- when the py-spy dump it precedes was read at the same instant of the same input: that dump's
      -- finding tells of it (batch16/06: `self.cur_batch.batch_size()=1`, then "Pyspy dump for PID 499")
      AND NOT (e.event_id IN (SELECT event_id FROM watchdogs WHERE watchdog_kind = 'debug_info')
               AND EXISTS (SELECT 1 FROM records p
                           WHERE p.kind = 'pyspy' AND p.ts = e.ts AND p.source IS NOT DISTINCT FROM e.source))
),
bits AS (  -- a record no parser typed holding only fragments of Python frames (several processes' dumps
           -- written at once: `File "` and `, line N` apart, no frame intact): stack text, unread
    SELECT *, kind = 'other' AND regexp_matches(text, '(^|[ \t"])File "') AND regexp_matches(text, ', line \d+')
              AND NOT regexp_matches(text, 'File "[^"\n]+", line \d+,? in \S') AS frame_bits,
              -- a reporter's lead-in to the block pasted under it: one line of prose (four words or more,
              -- no time or level read, no kind) that ends with a colon; its crash words are the story told
              -- of the log, not a record of it (batch16/08: "Log evidence: server crashed mid-eval with
              -- SIGSEGV (exit code -11) inside mooncake's RDMA cleanup path:")
              kind = 'other' AND NOT is_traceback AND ts IS NULL AND printed_time IS NULL AND level IS NULL
                AND regexp_matches(trim(text), '^[^\n]*\S:$')
                AND len(regexp_split_to_array(trim(text), '\s+')) >= 4 AS lead_in,
           -- a record no parser typed holding native stack frames without their message: c10's
           -- `frame #N: symbol + 0x… (0x… in lib.so)` (after a Ray actor's prefix too: RLinf#925, batch17/04)
           -- or Open MPI's backtrace `[host:pid] [ N] lib.so(symbol+0x…)[0x…]` (TensorRT-LLM#2518, batch17/06)
           kind = 'other' AND (regexp_matches(text, '(?m)(^|\) )frame #\d+: \S[^\n]* \+ 0x[0-9a-f]+ \(0x[0-9a-f]+ in \S')
                               OR regexp_matches(text, '(?m)^\[[\w.-]+:\d+\] \[ *\d+\] \S+\([^)\n]*\)\[0x[0-9a-f]+\]'))
             AS native_frames,
           -- an API client's failed call as the OpenAI Python SDK prints it (its APIStatusError text):
           -- `Error code: 400 - {'object': 'error', …}`, no time or level of its own (sglang#4300, batch18/13:
           -- a 400 from SGLang's function-call parser, "Failed to parse fc related info to json format!")
           regexp_matches(text, '(?m)\bError code: [45]\d\d - [{\[]') AS api_error,
           -- an answer that came back with the model's tool-call markup as its text: a chat completion's
           -- message (`"role": "assistant"` or a `"reasoning_content":` field) holding a tool-call token
           -- (DeepSeek's <｜tool▁calls▁begin｜>, <｜DSML｜…>; Kimi-K2's <|tool_calls_section_begin|>,
           -- <|tool_call_begin|>): the reasoning or tool-call parser let the call through as text, the quiet
           -- failure of tool calling (sglang pull 18246, batch20/11: `"tool_calls": null`); or a message as the
           -- OpenAI Python SDK prints its object (`ChatCompletionMessage(content='<｜tool▁calls▁begin｜>…`, a
           -- stream's `ChoiceDelta(content=…`: its role printed after the content, sglang pull 5224, batch25/10)
           regexp_matches(text, '"role":\s*"assistant"|"reasoning_content":|\b(ChatCompletionMessage|ChoiceDelta)\((content|reasoning_content)=|\brole=''assistant''')
             AND regexp_matches(text, '<[|｜]\s*tool[▁_ ]calls?(?:[▁_ ]section)?[▁_ ](?:begin|end)[|｜]>|<[|｜]\s*tool[▁_ ]call[▁_ ](?:begin|end|argument[▁_ ]begin)[|｜]>|</?[|｜]\s*DSML\s*[|｜]') AS markup_answer
    FROM marked
),
graded AS (
    SELECT *,
           CASE
             -- "crashed" is a crash marker only in a log record: in prose it is the reporter's story
             WHEN regexp_matches(text, '(?i)Fatal Python error|Segmentation fault|\bSegfault\b|\bSIG(SEGV|ABRT|BUS|ILL)\b|core dumped|terminate called|exit(ed)? (with )?code -\d+|free\(\): invalid|double free|malloc\(\): |corrupted (size|double-linked)')
                  -- the kernel's OOM killer (`Out of memory: Killed process 25315 (python3)`: tranX#41, batch19/08)
                  -- and Triton's signal handler (`Signal (11) received.` above its frames: triton#3916, batch19/11)
                  OR regexp_matches(text, '(?m)Out of memory: Killed process \d+|^Signal \(\d+\) received\.')
                  OR (logged AND regexp_matches(text, '(?i)\bcrashed\b'))
               THEN 1
             -- (the router's Rust tracing lines print no Python exception line: an `ApiError: …` in one is the
             -- Debug print of an error value, marked by the record's level: vllm-project/aibrix#1350, batch25/07)
             WHEN is_traceback OR regexp_matches(text, '(?m)(^|[ \t])File "[^"]+", line \d+, in \S')
                  OR (regexp_matches(text, '(?m)(^|[ \t])([A-Za-z_]\w*\.)*([A-Z]\w*(Error|Exception)|Exception): \S')
                      AND NOT (role = 'router' AND regexp_matches(text, '^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s')))
                  OR regexp_matches(text, '(?m)^([A-Za-z_]\w*\.)*[A-Z]\w*(Error|Exception):[ \t]*\n[ \t]*\S')
                  OR frame_bits OR native_frames
               THEN 2
             WHEN is_watchdog OR is_transfer_error
                  OR (logged AND regexp_matches(text, '(?i)\btimed out\b|\bwatchdog\b.*\b(fired|timeout|failure)'))
                  -- DeepEP's kernels print their timeouts bare, without a header (a line of its own)
                  OR regexp_matches(text, '(?m)^DeepEP\b[^\n]*\btimeout\b')
               THEN 3
             WHEN upper(coalesce(level, '')) IN ('ERROR', 'ERR', 'CRITICAL', 'CRIT', 'FATAL', 'E', 'F', 'ALERT', 'EMERG')
                  -- NCCL prints its failures at WARN (its INFO lines are the trace): `host:pid:tid [dev] file:line NCCL WARN`
                  OR (upper(coalesce(level, '')) IN ('WARN', 'WARNING') AND regexp_matches(text, '^\S+:\d+:\d+ \[\d+\] (\S+:\d+ )?NCCL WARN '))
                  OR api_error OR markup_answer
               THEN 4
             -- a line saying its error is ignored (SGLang's "Ignore import error when loading …" of an
             -- optional model) tells of no failure
             WHEN logged AND regexp_matches(regexp_replace(text, '(?im)^.*\bignor(e|ed|ing)\b.*\berrors?\b.*$', '', 'g'),
                                            '(?i)\b(failed|failure|error|out of memory)\b|\bOOM\b|but the state was deleted')
               THEN 5
           END AS grade,
           -- among records marked by their error level alone (grade 4), one whose words say it failed comes
           -- before one that does not: "EngineCore encountered a fatal error." before the stats dump printed
           -- beside it at the same level and instant (batch17/01); the words in prose case, not a header's
           -- level (ERROR, FATAL). Crash markers keep the order printed: the cause first (batch3/05's
           -- "terminate called …" before "Fatal Python error: Aborted")
           regexp_matches(text, '\b([Ff]atal|[Ff]ailed|[Ff]ailure|[Ee]rror|[Oo]ut of memory)\b|\bOOM\b') AS says_failure
    FROM bits WHERE NOT lead_in
),
found AS MATERIALIZED (  -- read four times below: graded and quoted once
    SELECT * EXCLUDE (marker),
           marker IS NOT NULL AS on_marker, marker IS NULL AND lead_line IS NOT NULL AS on_lead,
           -- a router's Rust tracing line quoted from its message on: its time and level are said beside the
           -- quote, and its span, target and file:line would push the message past the quote's length
           -- (batch25/07: "Error in Kubernetes watcher: … pods is forbidden …")
           (CASE WHEN role = 'router' THEN '^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+([^\n]*?\.rs:\d+: )?'
                 ELSE '^$' END) AS _quote_head,
           regexp_replace(coalesce(marker,
                    CASE WHEN grade = 2 AND escaped_tb AND frame_function IS NOT NULL
                         THEN 'File "' || coalesce(frame_file, '?') || '", line ' || coalesce(frame_line::VARCHAR, '?') || ', in ' || frame_function END,
                    CASE WHEN grade = 2 THEN coalesce(lead_line, regexp_extract_all(text, '(?m)^.*\bFile "[^"]+", line \d+, in \S.*$')[-1]) END,
                    regexp_extract(text, '(?m)^.*\S.*$')),
                    _quote_head, '') AS quote,
           -- the frame on the line right after a crash marker's line (a faulthandler dump's first thread,
           -- after a blank line and its header, is any thread, not the one that crashed: batch10/04); frames
           -- that name only an address (the signal handler's, `in 0x00007599e9c5051f`: batch5/14) are skipped
           -- all the frames of that block, most recent first (batch16/08: ibv_destroy_qp, then its callers
           -- mooncake::RdmaEndPoint::deconstruct() and mooncake::WorkerPool::transferWorker(int))
           CASE WHEN grade = 1 AND marker IS NOT NULL THEN
             list_filter(regexp_extract_all(
                           regexp_extract(substr(text, strpos(text, marker) + length(marker)),
                                          '^[ \t]*\n((?:[ \t]*File "[^"\n]*", line \d+,? in [^\n]+(?:\n|$))+)', 1),
                           ', in ([^\n]{1,120})', 1),
                         lambda f: NOT regexp_matches(f, '^0x[0-9a-fA-F]+\s*$'))
           END AS banner_frames,
           -- a signal handler's native backtrace below its marker (Triton's `Signal (11) received.` then
           -- `0# 0x… in tritonserver` … `5# TRITONBACKEND_ResponseSend in …`): the first frame that names a
           -- function, the frames of bare addresses skipped (triton#3916, batch19/11)
           CASE WHEN grade = 1 AND marker IS NOT NULL THEN
             nullif(regexp_extract(substr(text, strpos(text, marker) + length(marker)),
                                   '(?m)^[ \t]*\d+# ([A-Za-z_][^\s(]{0,119}) in \S', 1), '')
           END AS first_named
    FROM (
        SELECT *,
               -- a cut traceback's lead-in line that names who raised (SGLang of 2024's "Exception in
               -- ModelRpcClient:" above its traceback, batch18/04; threading's "Exception in thread X:"):
               -- quoted before the innermost frame, which is said beside it
               -- or the message its logger printed above it (tracebacks.lead: "Exception in Replica(…), the
               -- replica will be stopped.", batch21/03), never its innermost frame's line
               CASE WHEN grade = 2 AND is_traceback AND exception IS NULL
                    THEN coalesce(nullif(regexp_extract(text, '^\s*(Exception in [^\n]*\S:|Process [A-Za-z][\w-]*:)[ \t]*\n', 1), ''),
                                  tb_lead)
               END AS lead_line,
               -- the line that carries the marker (else the innermost frame, else the first line); an exception
               -- line with an empty message and the message's first line below it, as one (`ImportError: ` then
               -- `[sgl_kernel] CRITICAL: Could not load any common_ops library!`, batch23/03), before a line of
               -- the message that names another exception (its `- ImportError: …undefined symbol…` detail)
               coalesce(CASE WHEN grade = 2 THEN nullif(regexp_replace(
                   regexp_extract(text, '(?m)^([A-Za-z_]\w*\.)*[A-Z]\w*(Error|Exception):[ \t]*\n[ \t]*\S[^\n]*'),
                   ':[ \t]*\n[ \t]*', ': '), '') END,
               nullif(regexp_extract(text, CASE grade
                 WHEN 1 THEN '(?im)^.*(Fatal Python error|Segmentation fault|Segfault|SIG(SEGV|ABRT|BUS|ILL)|core dumped|terminate called|exit(ed)? (with )?code -\d+|crashed|free\(\): invalid|double free|malloc\(\): |corrupted (size|double-linked)|Out of memory: Killed process|Signal \(\d+\) received).*$'
                 WHEN 2 THEN '(?m)^.*(^|[ \t])([A-Za-z_]\w*\.)*([A-Z]\w*(Error|Exception)|Exception): \S.*$'
                 -- the client's status error line, wherever the record starts (prose may lead it)
                 WHEN 4 THEN CASE WHEN api_error THEN '(?m)^.*\bError code: [45]\d\d - [{\[].*$'
                                  -- the line that holds the markup, wherever the message starts
                                  WHEN markup_answer THEN '(?m)^.*(' || '<[|｜]\s*tool[▁_ ]calls?(?:[▁_ ]section)?[▁_ ](?:begin|end)[|｜]>|<[|｜]\s*tool[▁_ ]call[▁_ ](?:begin|end|argument[▁_ ]begin)[|｜]>|</?[|｜]\s*DSML\s*[|｜]' || ').*$'
                                  ELSE '(?m)^.*\S.*$' END
                 WHEN 5 THEN '(?im)^.*(\b(failed|failure|error|out of memory)\b|\bOOM\b|but the state was deleted).*$'
                 ELSE '(?m)^.*\S.*$' END), '')) AS marker
        FROM graded WHERE grade IS NOT NULL
    )
),
split AS (SELECT * EXCLUDE (kind), CASE WHEN grade <= 2 THEN 'unexplained_crash' ELSE 'unexplained_errors' END AS kind FROM found),
counted AS (
    SELECT host, kind,
           min(ts) AS ts, max(ts) AS end_ts, count(*)::BIGINT AS n,
           CASE WHEN count(DISTINCT coalesce(role, 'unknown')) = 1 THEN any_value(coalesce(role, 'unknown')) ELSE 'unknown' END AS role,
           list_sort(list_distinct(list(rank_label) FILTER (WHERE rank_label <> ''))) AS ranks,
           count(*) FILTER (WHERE rank_label <> '') AS with_rank,
           list(event_id ORDER BY grade, NOT on_marker, grade = 4 AND NOT says_failure, ts NULLS LAST, event_id) AS evidence,
           arg_min(event_id, (grade, NOT on_marker, grade = 4 AND NOT says_failure, coalesce(ts, TIMESTAMPTZ '9999-01-01'), event_id)) AS worst_id,
           max(event_id) AS last_id,
           count(*) FILTER (WHERE grade = 1) AS crash, count(*) FILTER (WHERE grade = 2) AS exception,
           count(*) FILTER (WHERE grade = 3 AND NOT is_child_report) AS watchdog,
           count(*) FILTER (WHERE grade = 3 AND is_child_report) AS child_reports, count(*) FILTER (WHERE grade = 4 AND NOT api_error AND NOT markup_answer
                                                                                     AND NOT upper(coalesce(level, '')) IN ('WARN', 'WARNING')) AS error_level,
           -- NCCL's failures printed at WARN: counted as what they are, never as an error level (batch24/07's
           -- `… transport/p2p.cc:275 NCCL WARN Cuda failure 'invalid argument'`, level WARNING)
           count(*) FILTER (WHERE grade = 4 AND NOT api_error AND NOT markup_answer
                              AND upper(coalesce(level, '')) IN ('WARN', 'WARNING')) AS nccl_warns,
           count(*) FILTER (WHERE grade = 4 AND api_error) AS api_errors,
           count(*) FILTER (WHERE grade = 4 AND markup_answer AND NOT api_error) AS markup_answers,
           count(*) FILTER (WHERE grade = 5) AS failure_words
    FROM split GROUP BY host, kind
),
places AS (  -- "decode TP1 ×2", "TP7 ×1" (role not read), "no role or rank read ×3"
    SELECT host, kind, string_agg(place || ' ×' || k, ', ' ORDER BY k DESC, place) AS by_place
    FROM (SELECT host, kind, coalesce(nullif(concat_ws(' ', nullif(role, 'unknown'), nullif(rank_label, '')), ''),
                                      'no role or rank read') AS place, count(*) AS k
          FROM split GROUP BY ALL)
    GROUP BY host, kind
)
SELECT c.ts, c.end_ts, c.kind, c.role, c.host, c.ranks, c.n,
       CASE
         -- a traceback whose exception was read: the exception as parsed (its type in the headline, so
         -- the chain names it), never a frame line quoted
         WHEN w.grade = 2 AND w.exception IS NOT NULL THEN
            'Unexplained exception ' || w.exception
            || coalesce(': ' || left(w.exc_message, 120) || CASE WHEN length(w.exc_message) > 120 THEN '…' ELSE '' END, '')
            || coalesce(' in ' || w.frame_function
                        || coalesce(' (' || regexp_extract(w.frame_file, '[^/]+$') || ':' || w.frame_line || ')', ''), '')
         ELSE CASE c.kind WHEN 'unexplained_crash' THEN 'Unexplained crash or exception' ELSE 'Unexplained error' END
              || ': "' || left(trim(w.quote), 160) || CASE WHEN length(trim(w.quote)) > 160 THEN '…' ELSE '' END || '"'
              || CASE WHEN w.on_lead THEN ' (no exception line read in its traceback'
                           || coalesce('; innermost frame: ' || w.frame_function
                                       || coalesce(' (' || regexp_extract(w.frame_file, '[^/]+$') || ':' || w.frame_line || ')', ''), '')
                           || ')'
                      WHEN w.escaped_tb AND w.exception IS NULL
                      THEN ' (a traceback printed inside a string, its line ends escaped, cut before its exception line'
                           || coalesce('; raised while handling ' || left(w.tb_cause, 120) || CASE WHEN length(w.tb_cause) > 120 THEN '…' ELSE '' END, '')
                           || ')'
                      WHEN w.frame_bits THEN ' (fragments of Python stack frames, none intact: what failed cannot be told)'
                      -- the program's call into its communication library, when a frame names one (MPI's,
                      -- NCCL's or HCCL's API: batch17/06's Open MPI backtrace waits in MPI_Bcast, its
                      -- innermost frames being Open MPI's own ompi_sync_wait_mt …)
                      WHEN w.native_frames THEN ' (native stack frames without their message: what failed cannot be told'
                           || coalesce('; the MPI/NCCL call in them: '
                                       || nullif(regexp_extract(w.text, '\b(MPI_[A-Z][A-Za-z_]*|nccl[A-Z]\w*|[Hh]ccl[A-Z]\w*)\b', 1), ''), '')
                           || ')'
                      ELSE '' END
              -- a crash banner whose frames follow it at once prints the most recent first (the "!!!!!!! Segfault
              -- encountered !!!!!!!" banner's `File "<unknown>", line 0, in ibv_destroy_qp`, batch16/08): name it
              || CASE WHEN len(w.banner_frames) > 0 THEN
                   ' (its first frame: ' || trim(w.banner_frames[1])
                   || CASE WHEN len(w.banner_frames) > 1
                           -- a long signature's arguments cut to (…) (batch5/14's std::__cxx11::basic_string<…>)
                           THEN '; its callers, as printed: ' || array_to_string(list_transform(w.banner_frames[2:4],
                                    lambda f: CASE WHEN length(trim(f)) > 60 THEN regexp_replace(trim(f), '\(.*$', '(…)') ELSE trim(f) END), ' ← ')
                                || CASE WHEN len(w.banner_frames) > 4 THEN ' ← … (' || (len(w.banner_frames) - 4) || ' more)' ELSE '' END
                           ELSE '' END || ')'
                 ELSE coalesce(' (its first named frame: ' || w.first_named || ')', '') END
       END
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(w.role, 'unknown'), nullif(w.rank_label, '')), ''), '')
       -- a time printed without a year or a date quoted as printed (events.printed_time: no level letter)
       || coalesce(' at ' || strftime(w.ts, '%Y-%m-%d %H:%M:%S UTC'),
                   ' (no time read' || coalesce('; printed without a '
                       || CASE WHEN w.printed_time LIKE '__-__ %' THEN 'year: ' ELSE 'date: ' END || w.printed_time, '')
                   || ')')
       || '; ' || c.n || ' record(s) that no other finding explains ('
       || concat_ws(', ', nullif(c.crash, 0) || ' crash marker', nullif(c.exception, 0) || ' exception or traceback',
                    nullif(c.watchdog, 0) || ' watchdog or timeout',
                    nullif(c.child_reports, 0) || ' report of a failed child process',
                    nullif(c.error_level, 0) || ' error level',
                    nullif(c.nccl_warns, 0) || ' NCCL WARN line',
                    nullif(c.api_errors, 0) || ' failed API call (an HTTP error status)',
                    nullif(c.markup_answers, 0) || ' answer with tool-call markup left in its text (the call not parsed)',
                    nullif(c.failure_words, 0) || ' failure word')
       || '; by role and rank as read: ' || p.by_place || ')'
       -- what the records came to: the last one printed, when it is not the one quoted (a library's error
       -- first, the program's own "… initialization failed." last: batch5/03)
       || CASE WHEN l.event_id <> w.event_id
               THEN '; the last of them: "' || left(trim(l.quote), 160) || CASE WHEN length(trim(l.quote)) > 160 THEN '…' ELSE '' END || '"'
               ELSE '' END AS summary,
       c.evidence,
       'events (error level or crash/failure marker, cited by no other finding; rule unexplained_errors)' AS rests_on
FROM counted c JOIN places p ON p.host IS NOT DISTINCT FROM c.host AND p.kind = c.kind
JOIN found w ON w.event_id = c.worst_id
JOIN found l ON l.event_id = c.last_id
ORDER BY c.ts NULLS LAST
