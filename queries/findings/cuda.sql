-- question: Which CUDA errors did the engines print: device-side assert, illegal memory access, out of
--   memory, another CUDA error? And which GPU errors did the NVIDIA driver print (a GPU fallen off the bus, an Xid)?
-- tables: events, tracebacks
-- columns:
--   ts        the first record of the group (UTC)
--   end_ts    the last one (UTC)
--   kind      cuda_error
--   role      role of the records
--   host      host
--   ranks     the ranks that printed it: [TP3] from SGLang's header, [rank 3] from PyTorch's [rank3]: prefix
--   n         records
--   summary   the finding in words: which CUDA error, how many records, where, when
--   evidence  events.event_id of every record it counts
--   rests_on  the rule behind it
-- parameters: none.
-- reading: one row per (role, host, error). A record is counted under the first error its text names,
--   in the order of the table below (a device-side assert is often reported as "CUDA error: …" too); a
--   comment line (`#` first) counts in none. The first record of the group that prints them gives how much an
--   OOM asked for and the GPU's total and free memory (PyTorch's "Tried to allocate …. GPU N has a total
--   capacity of … of which … is free"), and the innermost frame its traceback shows (tracebacks; a cut
--   traceback's last frame read, not where it was raised).
WITH errors(error, pattern, said) AS (VALUES
    ('device_side_assert', 'device-side assert triggered', 'CUDA device-side assert triggered'),
    ('illegal_memory_access', 'an illegal memory access was encountered', 'CUDA illegal memory access'),
    ('out_of_memory', 'CUDA out of memory|OutOfMemoryError|CUDA error: out of memory', 'CUDA out of memory'),
    ('cuda_error', 'CUDA error: |CUDA_ERROR_\w+|cudaError\w+', 'CUDA error'),
    -- the NVIDIA driver's own word in the kernel's log (dmesg, journalctl -k): a GPU lost from the bus, with
    -- or without its Xid line (NVSentinel#155, batch19/04), and any other Xid (`NVRM: Xid (PCI:…): 79, …`)
    ('gpu_fallen_off_bus', 'NVRM: [^\n]*fallen off the bus|NVRM: Xid \([^)]*\): 79\b', 'GPU fallen off the bus (NVIDIA driver)'),
    ('xid', 'NVRM: Xid \(', 'GPU Xid error (NVIDIA driver)')
),
named AS MATERIALIZED (  -- every record's text searched once (the subquery below reads these rows twice)
    SELECT * FROM records
    WHERE regexp_matches(message, 'device-side assert|illegal memory access|out of memory|OutOfMemoryError|CUDA error|CUDA_ERROR_|cudaError|NVRM: ')
      -- a comment line (`#` first: a paste's note, a script's comment) is no record of an error, as in
      -- unexplained.sql (batch16/13: "# note: … The title says CUDA out of memory, which the chunk does not reach.")
      AND NOT starts_with(ltrim(message), '#')
),
hit AS (
    SELECT e.*, (SELECT x.error FROM errors x WHERE regexp_matches(e.message, x.pattern)
                 ORDER BY list_position(['device_side_assert', 'illegal_memory_access', 'out_of_memory', 'cuda_error',
                                         'gpu_fallen_off_bus', 'xid'], x.error)
                 LIMIT 1) AS error,
           -- PyTorch's "[rankN]:" prefix is a global rank (tp_rank holds it by contract): "rank N", not TPN
           CASE WHEN e.dp_rank IS NULL AND e.pp_rank IS NULL AND e.ep_rank IS NULL
                     AND regexp_matches(e.message, '^(?:\([A-Za-z]\w* pid=\d+[^)]*\) )*\[rank' || e.tp_rank || '\]:')
                THEN 'rank ' || e.tp_rank
                ELSE concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank) END AS rank_label
    FROM named e
),
told AS (  -- where (the innermost frame of the record's traceback) and, for an OOM, how much PyTorch says it asked for
    -- (of a chained traceback whose final part names no CUDA error, no frame: its innermost frame is the later
    -- exception's, never where the CUDA error was raised: batch23/06)
    SELECT h.*, CASE WHEN regexp_matches(coalesce(t.traceback, ''), '(During handling of the above exception, another exception occurred|The above exception was the direct cause of the following exception):')
                      AND NOT regexp_matches(regexp_replace(coalesce(t.traceback, ''),
                                                            '(?s)^.*\n(\([^)\n]*\) )*(During handling of the above exception, another exception occurred|The above exception was the direct cause of the following exception):[ \t]*\n', ''),
                                             'device-side assert|illegal memory access|out of memory|OutOfMemoryError|CUDA error|CUDA_ERROR_|cudaError')
                     THEN NULL
                     ELSE t.function || coalesce(' (' || regexp_extract(t.file, '[^/]+$') || ':' || t.line || ')', '') END AS frame,
           nullif(regexp_extract(h.message, 'Tried to allocate ([\d.]+ ?[KMGT]i?B)', 1), '') AS asked,
           nullif(regexp_extract(h.message, 'NVRM: (?:The NVIDIA GPU |Xid \(PCI:)([0-9a-fA-F:.]+)', 1), '') AS gpu,
           nullif(regexp_extract(h.message, 'GPU (\d+) has a total capacity of ([\d.]+ ?[KMGT]i?B) of which ([\d.]+ ?[KMGT]i?B) is free', 0), '') AS gpu_said
    FROM hit h LEFT JOIN tracebacks t ON t.event_id = h.event_id
)
SELECT min(h.ts) AS ts, max(h.ts) AS end_ts, 'cuda_error' AS kind, h.role, h.host,
       list_sort(list_distinct(list(h.rank_label) FILTER (WHERE h.rank_label <> ''))) AS ranks, count(*)::BIGINT AS n,
       any_value(x.said)  -- an unknown role is left out, never worded
       || coalesce(' on ' || nullif(concat_ws(' ', nullif(h.role, 'unknown'),
                    nullif(array_to_string(list_sort(list_distinct(list(h.rank_label) FILTER (WHERE h.rank_label <> ''))), ', '), '')), ''), '')
       -- the GPU the driver names (`The NVIDIA GPU 0000:b3:00.0`, `Xid (PCI:0000:44:00): 79`)
       || coalesce(' (GPU ' || arg_min(h.gpu, h.event_id) FILTER (WHERE h.gpu IS NOT NULL) || ')', '')
       || ': ' || count(*) || ' record(s)'
       || coalesce(' from ' || strftime(min(h.ts), '%Y-%m-%d %H:%M:%S UTC'), ' (no time read)')
       -- the first record that says it: PyTorch's "Tried to allocate 138.00 MiB. GPU 0 has a total capacity of
       -- 79.15 GiB of which 2.19 MiB is free" and its traceback's innermost frame (batch13/09)
       || coalesce(': tried to allocate ' || arg_min(h.asked, h.event_id) FILTER (WHERE h.asked IS NOT NULL)
                   || coalesce(' (' || regexp_replace(arg_min(h.gpu_said, h.event_id) FILTER (WHERE h.gpu_said IS NOT NULL),
                                                      '^GPU (\d+) has a total capacity of (.+) of which (.+) is free$',
                                                      'GPU \1: \2 total, \3 free') || ')', ''), '')
       || coalesce(CASE WHEN any_value(h.asked) IS NULL THEN ': ' ELSE '; ' END || 'innermost frame read: '
                   || arg_min(h.frame, h.event_id) FILTER (WHERE h.frame IS NOT NULL), '') AS summary,
       list(h.event_id ORDER BY h.ts) AS evidence,
       'events whose text names a CUDA error (first match of the table in this query)' AS rests_on
FROM told h JOIN errors x ON x.error = h.error
GROUP BY h.role, h.host, h.error
ORDER BY ts NULLS LAST
