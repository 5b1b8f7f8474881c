-- Question: which collective did each process reach last, by NCCL's own count (NCCL_DEBUG=INFO with
--   NCCL_DEBUG_SUBSYS=COLL prints a line per collective call), and which process stopped behind the
--   others of its engine?
-- Tables: events (NCCL's lines "host:pid:tid [dev] NCCL INFO <Op>: opCount <hex> sendbuff … comm 0x…
--   [nranks=N] stream …", NCCL src/enqueue.cc), processes (the rank of each pid).
-- Columns: host, role, boot_id, pid, tp_rank (of the pid where its other records print one; else NULL),
--   comm (the address of the communicator in that process), nranks, calls (NCCL lines of this comm),
--   last_op (AllReduce or AllGather or Broadcast …), last_op_count (its opCount: hex as printed; read
--   as a number), last_ts, peers (processes of the same role and host and nranks), max_op_count (the
--   highest last_op_count among them), behind (max_op_count - last_op_count), event_id, source,
--   source_pos (of the last line).
-- Parameters: none.
-- How to read: one row per process and communicator. opCount counts the collectives a communicator
--   has issued; the ranks of one group issue the same sequence, so after a stop the rank whose count
--   is behind is the one that did not enter the collective the others wait in (a second view, beside
--   py-spy's stacks in desync, of which rank went the other way). A communicator's address differs
--   from process to process: rows are compared by role, host and nranks, so two groups of the same
--   size on one host (TP and another group) compare with each other; read behind within rows of the
--   same last_op. Order: role, host, nranks, tp_rank, pid.
WITH nccl AS (
    SELECT e.event_id, e.ts, e.host, e.role, e.boot_id, e.pid, e.source, e.source_pos,
           regexp_extract(e.message, 'NCCL INFO (\w+): opCount ([0-9a-fA-F]+) .*comm (0x[0-9a-fA-F]+|\d+) \[nranks=(\d+)',
                          ['op', 'count', 'comm', 'nranks']) AS m
    FROM events e
    WHERE e.message LIKE '%NCCL INFO %opCount %'
),
calls AS (
    SELECT *, m.op AS op, TRY_CAST('0x' || m.count AS UBIGINT) AS op_count, m.comm AS comm,
           TRY_CAST(m.nranks AS INTEGER) AS nranks
    FROM nccl
    WHERE m.op <> ''
),
last_call AS (
    SELECT host, role, boot_id, pid, comm, nranks, count(*) AS calls,
           arg_max(op, op_count) AS last_op, max(op_count) AS last_op_count, max(ts) AS last_ts,
           arg_max(event_id, op_count) AS event_id, arg_max(source, op_count) AS source,
           arg_max(source_pos, op_count) AS source_pos
    FROM calls
    GROUP BY ALL
),
ranks AS (
    SELECT host, boot_id, pid, max(tp_rank) AS tp_rank FROM processes GROUP BY ALL
)
SELECT l.host, l.role, l.boot_id, l.pid, r.tp_rank, l.comm, l.nranks, l.calls, l.last_op, l.last_op_count,
       l.last_ts,
       count(*) OVER peers AS peers,
       max(l.last_op_count) OVER peers AS max_op_count,
       max(l.last_op_count) OVER peers - l.last_op_count AS behind,
       l.event_id, l.source, l.source_pos
FROM last_call l
LEFT JOIN ranks r ON r.host IS NOT DISTINCT FROM l.host AND r.boot_id IS NOT DISTINCT FROM l.boot_id
                 AND r.pid IS NOT DISTINCT FROM l.pid
WINDOW peers AS (PARTITION BY l.role, l.host, l.nranks)
ORDER BY l.role, l.host, l.nranks, r.tp_rank NULLS LAST, l.pid
