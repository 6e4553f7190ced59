"""Tzer: low-level IR fuzzing of TVM's TIR (PrimFuncs) jointly with TIR pass sequences.

- `passes`: the TIR pass table, its ordering rules, pass-sequence sampling and mutation (no TVM import);
- `tir`: TIR node table, holes with their constraints, the expression/statement generator, mutators;
- `seeds`: PrimFuncs from legalized graphs and zoo models, plus the empty PrimFunc;
- `coverage`: pluggable coverage sources (IR state, Python lines of TVM, SanitizerCoverage counters);
- `runner`: the sandboxed worker side (passes, builds, runs, timings, coverage) and reproducer scripts;
- `campaign`: Tzer's joint evolutionary loop (Algorithm 1) over the shared store.
"""
