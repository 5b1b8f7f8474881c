"""Renderers: the report (``report``), the per-rank timeline (``timeline``), the Chrome/Perfetto trace
(``trace``) and one record with its neighbours (``show``). They read findings and tables only."""
