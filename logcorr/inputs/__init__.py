"""Inputs: what a path is (a journal, a capture, a container log, a dump, a folder of them), bounded
reading of each, envelopes taken off, bytes → record chunks in ``parsers.journald.RECORD_COLUMNS``,
and multi-line records re-joined. Nothing here knows tables or the OUT folder."""
