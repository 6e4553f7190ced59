"""The one strategy-blind campaign engine: budget, in-flight tests, store-before-run, re-runs, dedup,
reduction scheduling, progress, resume; the store (the only SQL) and the report."""
