-- question: What was the last batch each rank advanced, how far does each rank lag the freshest rank
--   of its engine, and how long did the other role go on after it?
-- tables: batches, processes
-- columns:
--   host               host of the rank
--   role               prefill or decode
--   dp_rank            data-parallel rank (NULL when the line has none)
--   pp_rank            pipeline-parallel rank
--   tp_rank            tensor-parallel rank
--   ep_rank            expert-parallel rank
--   rank_label         the ranks as SGLang prints them, e.g. "TP2" or "DP1 TP1 EP1"
--   run                1 for the first process (pid) of this rank in the data, 2 after a restart …
--   pid                the scheduler process of this run
--   batches            batch lines of this rank in this run
--   first_batch_ts     its first batch (UTC)
--   last_batch_ts      its last batch: where the rank stopped advancing (UTC)
--   batch_type         prefill or decode (the line's "Prefill batch"/"Decode batch")
--   forward_iter       forward iteration of the last batch, when the line prints it
--   running_req        #running-req of the last batch
--   queue_req          #queue-req of the last batch
--   transfer_req       #transfer-req of the last batch (decode; NULL when not printed)
--   token_usage        token usage of the last batch (fraction)
--   gen_throughput     gen throughput (token/s) of the last batch
--   freshest_in_role_ts  the latest batch of any rank of the same role before this rank's next run
--   lag_in_role_s      freshest_in_role_ts - last_batch_ts, seconds (0 for the freshest rank)
--   other_role         the other engine's role
--   other_role_last_ts the latest batch of the other role before this rank's next run (UTC)
--   lag_behind_other_role_s  other_role_last_ts - last_batch_ts, seconds: how long the other engine
--                      went on advancing after this rank stopped (negative: this rank went on longer)
--   next_run_first_ts  first record of this rank's next run (restart), NULL for the last run
--   event_id           events.event_id of the last batch line
--   source             its file or journal
--   source_pos         its position
-- parameters:
--   since   only batches at or after this time (TIMESTAMPTZ, UTC)
--   until   only batches at or before this time (TIMESTAMPTZ, UTC): "the last batch as of T"
-- reading: one row per rank and run, prefill ranks then decode ranks. A rank whose lag_in_role_s is
--   far above the batch interval stopped before its peers; when every rank of a role shows the same
--   last_batch_ts and a large lag_behind_other_role_s, that role stopped at one instant while the other
--   went on (see wedge). A restart shows as run 2 with new pids. Empty: no batch lines.
WITH params AS (
    SELECT getvariable('since')::TIMESTAMPTZ AS since, getvariable('until')::TIMESTAMPTZ AS until
),
b AS (
    SELECT b.role, b.ts
    FROM batches AS b, params AS p
    WHERE (p.since IS NULL OR b.ts >= p.since) AND (p.until IS NULL OR b.ts <= p.until)
),
procs AS (
    -- every process of a rank (from all its records, not only batches), numbered in time order
    SELECT host, role, dp_rank, pp_rank, tp_rank, ep_rank, boot_id, pid, min(first_ts) AS first_ts
    FROM processes
    WHERE role IN ('prefill', 'decode') AND pid IS NOT NULL
      AND (tp_rank IS NOT NULL OR dp_rank IS NOT NULL OR pp_rank IS NOT NULL)
    GROUP BY ALL
),
runs AS (
    SELECT *,
        row_number() OVER w AS run,
        lead(first_ts) OVER w AS next_run_first_ts
    FROM procs
    WINDOW w AS (PARTITION BY host, role, dp_rank, pp_rank, tp_rank, ep_rank ORDER BY first_ts, pid)
),
last AS (
    -- the last batch: the greatest (ts, event_id), packed in one HUGEINT as µs << 53 | event_id
    SELECT
        b.host, b.role, b.dp_rank, b.pp_rank, b.tp_rank, b.ep_rank, b.pid, b.boot_id,
        count(*) AS batches,
        min(b.ts) AS first_batch_ts,
        max(b.ts) AS last_batch_ts,
        (max(epoch_us(b.ts)::HUGEINT * 9007199254740992 + b.event_id) % 9007199254740992)::BIGINT AS event_id
    FROM batches AS b, params AS p
    WHERE (p.since IS NULL OR b.ts >= p.since) AND (p.until IS NULL OR b.ts <= p.until)
    GROUP BY ALL
),
lb AS (
    -- the last batches' own fields. The ids go through list()/unnest so DuckDB sees a few rows and
    -- makes them the join's build side: the Parquet scan then skips every row group without one
    -- (on `IN (SELECT event_id FROM last)` it misjudged `last` as large and read all of batches)
    SELECT event_id, batch_type, forward_iter, running_req, queue_req, transfer_req, token_usage,
           gen_throughput, source, source_pos
    FROM batches WHERE event_id IN (SELECT unnest(ids) FROM (SELECT list(event_id) AS ids FROM last))
),
ranked AS (
    SELECT
        l.*,
        coalesce(r.run, 1) AS run,
        r.next_run_first_ts,
        CASE l.role WHEN 'prefill' THEN 'decode' WHEN 'decode' THEN 'prefill' END AS other_role,
        coalesce(r.next_run_first_ts, 'infinity'::TIMESTAMPTZ) AS horizon
    FROM last AS l
    LEFT JOIN runs AS r
      ON r.host IS NOT DISTINCT FROM l.host AND r.role = l.role
     AND r.dp_rank IS NOT DISTINCT FROM l.dp_rank AND r.pp_rank IS NOT DISTINCT FROM l.pp_rank
     AND r.tp_rank IS NOT DISTINCT FROM l.tp_rank AND r.ep_rank IS NOT DISTINCT FROM l.ep_rank
     AND r.pid IS NOT DISTINCT FROM l.pid AND r.boot_id IS NOT DISTINCT FROM l.boot_id
),
role_ts AS (
    -- each role's batch times for the ASOF joins below: the latest per minute, plus every batch in a
    -- minute that holds a horizon (there the latest of the minute may lie past the horizon). Minutes,
    -- not seconds: a day has 1,440 of them per role, and few groups keep the aggregate cheap
    SELECT role, max(ts) AS ts FROM b GROUP BY role, epoch_us(ts) // 60000000
    UNION ALL
    SELECT b.role, b.ts FROM b
    WHERE epoch_us(b.ts) // 60000000 IN (SELECT epoch_us(horizon) // 60000000 FROM ranked WHERE horizon < 'infinity')
),
fresh AS (
    SELECT k.event_id, same.ts AS freshest_in_role_ts
    FROM ranked AS k ASOF LEFT JOIN role_ts AS same ON same.role = k.role AND same.ts < k.horizon
),
other AS (
    SELECT k.event_id, o.ts AS other_role_last_ts
    FROM ranked AS k ASOF LEFT JOIN role_ts AS o ON o.role = k.other_role AND o.ts < k.horizon
)
SELECT
    k.host, k.role, k.dp_rank, k.pp_rank, k.tp_rank, k.ep_rank,
    concat_ws(' ', 'DP' || k.dp_rank, 'PP' || k.pp_rank, 'TP' || k.tp_rank, 'EP' || k.ep_rank) AS rank_label,
    k.run, k.pid, k.batches, k.first_batch_ts, k.last_batch_ts,
    lb.batch_type, lb.forward_iter, lb.running_req, lb.queue_req, lb.transfer_req, lb.token_usage,
    lb.gen_throughput,
    f.freshest_in_role_ts,
    (epoch_us(f.freshest_in_role_ts) - epoch_us(k.last_batch_ts)) / 1e6 AS lag_in_role_s,
    k.other_role,
    o.other_role_last_ts,
    (epoch_us(o.other_role_last_ts) - epoch_us(k.last_batch_ts)) / 1e6 AS lag_behind_other_role_s,
    k.next_run_first_ts,
    k.event_id, lb.source, lb.source_pos
FROM ranked AS k
JOIN lb USING (event_id)
LEFT JOIN fresh AS f ON f.event_id = k.event_id
LEFT JOIN other AS o ON o.event_id = k.event_id
ORDER BY k.role = 'decode', k.role, k.host, k.dp_rank, k.pp_rank, k.tp_rank, k.ep_rank, k.run
