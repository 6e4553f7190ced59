"""The fuzz loop, the store, dedup, reduction, reproducers and reports."""
