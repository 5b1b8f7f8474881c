-- question: Does tool-call markup leak more when more requests run at once? The share of answers
--   with markup per engine and band of running requests.
-- tables: request_concurrency (over request_log, batches)
-- columns:
--   host              host of the engine
--   role              the engine
--   band              running requests at the Finish line: 0-1, 2-4, 5-16, 17+, unknown (no batch line)
--   band_lo           the band's lowest count (NULL for unknown)
--   band_hi           its highest count (NULL: no upper bound, or unknown)
--   finished          Finish lines in the band
--   with_text         of those, lines holding the returned text (level 2 or 3): the denominator
--   leaks             answers with markup
--   leak_rate         leaks / with_text (NULL when no line holds text)
--   first_leak_ts     first leaking answer in the band (UTC)
--   last_leak_ts      last one (UTC)
--   families          the markup families seen
-- parameters: none (max_batch_age_s of request_concurrency applies).
-- reading: one row per engine and band, the four numbered bands always (finished 0 when none), the
--   unknown band only when it has lines. "Leaks only under load": leak_rate 0 in 0-1 and rising with
--   the band.
WITH r AS (SELECT * FROM request_concurrency),
bands(band, band_lo, band_hi) AS (VALUES ('0-1', 0, 1), ('2-4', 2, 4), ('5-16', 5, 16), ('17+', 17, NULL)),
engines AS (SELECT DISTINCT host, role FROM r),
per AS (
    SELECT host, role, band,
           count(*) AS finished,
           count(*) FILTER (WHERE text_logged) AS with_text,
           count(*) FILTER (WHERE markup_leak IS NOT NULL) AS leaks,
           min(ts) FILTER (WHERE markup_leak IS NOT NULL) AS first_leak_ts,
           max(ts) FILTER (WHERE markup_leak IS NOT NULL) AS last_leak_ts,
           list_sort(list_distinct(list(markup_leak))) AS families
    FROM r GROUP BY ALL
),
grid AS (
    SELECT e.host, e.role, b.band, b.band_lo, b.band_hi FROM engines AS e, bands AS b
    UNION ALL
    SELECT DISTINCT host, role, 'unknown', NULL::INTEGER, NULL::INTEGER FROM r WHERE band = 'unknown'
)
SELECT g.host, g.role, g.band, g.band_lo, g.band_hi,
       coalesce(p.finished, 0) AS finished,
       coalesce(p.with_text, 0) AS with_text,
       coalesce(p.leaks, 0) AS leaks,
       CASE WHEN p.with_text > 0 THEN p.leaks / p.with_text END AS leak_rate,
       p.first_leak_ts, p.last_leak_ts,
       coalesce(p.families, []::VARCHAR[]) AS families
FROM grid AS g LEFT JOIN per AS p ON p.host IS NOT DISTINCT FROM g.host AND p.role = g.role AND p.band = g.band
ORDER BY g.host, g.role, g.band_lo NULLS LAST
