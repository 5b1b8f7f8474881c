"""Store: the table contract (``schema``), the OUT folder and its atomic swap (``output``), the tables
derived at ingest from what was written (``processes``, ``config``) and the DuckDB file (``database``)."""
