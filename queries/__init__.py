"""Saved DuckDB questions, one .sql file each (installed as logcorr.queries)."""
