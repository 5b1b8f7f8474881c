-- question: How far apart are the clocks of the hosts (and of each unit's printed time from the journal),
--   so that times from several hosts can be compared without hiding an offset?
-- tables: events, rooms
-- columns:
--   kind               "printed_vs_journal": per host and unit, the time printed in the line against
--                      journald's receive time on the same host; "host_vs_host": per pair of hosts, the
--                      same bootstrap room seen on both (prefill on one, decode on the other)
--   host               the host measured
--   other              the unit compared (printed_vs_journal) or the other host (host_vs_host)
--   samples            records (printed_vs_journal) or rooms (host_vs_host) behind the figure
--   median_offset_s    median of (host's time - reference) in seconds: for printed_vs_journal the
--                      zone offset plus logging delay (0 when the host prints UTC); for host_vs_host
--                      the first sighting of a room on host minus its first sighting on other
--   min_offset_s       smallest of those differences
--   max_offset_s       largest of those differences
-- parameters:
--   (none)
-- reading: printed_vs_journal near a whole number of hours is a time zone (SGLang prints local time),
--   near 0 means the line's clock and journald agree (about -0.5 s when lines print whole seconds:
--   the printed time is cut, not rounded). host_vs_host is a transfer's duration plus the
--   clock offset between the two hosts: a median far above the KV transfer time (or negative) says
--   the clocks disagree by about that much, and times of the two hosts must be read with it in mind.
--   Empty host_vs_host rows: one host only, or no room seen on two hosts.
WITH printed AS (
    SELECT
        'printed_vs_journal' AS kind,
        host,
        unit AS other,
        count(*) AS samples,
        median(offset_us) / 1e6 AS median_offset_s,
        min(offset_us) / 1e6 AS min_offset_s,
        max(offset_us) / 1e6 AS max_offset_s
    FROM (
        -- integer µs, both read as UTC whatever the session's TimeZone
        SELECT host, unit, epoch_us(log_ts) - epoch_us(ts) AS offset_us FROM events
        WHERE log_ts IS NOT NULL AND ts IS NOT NULL AND host IS NOT NULL
    )
    WHERE offset_us <> 0  -- plain files: ts was taken from the printed time itself
    GROUP BY host, unit
),
first_seen AS (
    SELECT host, bootstrap_room, min(first_ts) AS first_ts
    FROM rooms
    WHERE bootstrap_room IS NOT NULL AND host IS NOT NULL
    GROUP BY host, bootstrap_room
),
pairs AS (
    SELECT
        'host_vs_host' AS kind,
        a.host,
        b.host AS other,
        count(*) AS samples,
        median(epoch(a.first_ts) - epoch(b.first_ts)) AS median_offset_s,
        min(epoch(a.first_ts) - epoch(b.first_ts)) AS min_offset_s,
        max(epoch(a.first_ts) - epoch(b.first_ts)) AS max_offset_s
    FROM first_seen AS a
    JOIN first_seen AS b ON a.bootstrap_room = b.bootstrap_room AND a.host <> b.host
    GROUP BY a.host, b.host
)
SELECT * FROM printed
UNION ALL
SELECT * FROM pairs
ORDER BY kind, host, other
