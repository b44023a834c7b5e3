"""Records, the append-only store, DuckDB aggregation and statistics."""
