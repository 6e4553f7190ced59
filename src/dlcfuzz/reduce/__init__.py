"""Reducers: graph-level (here), later mutation-sequence and pass-set ddmin."""
