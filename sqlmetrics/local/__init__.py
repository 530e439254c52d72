"""Evaluation on an embedded DuckDB: readers (inputs -> relations), checks, evaluate_local, output."""
