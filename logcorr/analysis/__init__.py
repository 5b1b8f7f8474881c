"""Analysis: questions asked of the store in DuckDB SQL (``saved``), the known upstream bug families
matched by SQL (``known_issues``) and the findings the renderers tell. Reads the store, writes nothing."""
