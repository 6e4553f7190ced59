"""TVM's TIR (PrimFuncs and the TIR passes): the techniques that work on it, which nothing but TVM
has. Tzer's library (the `tzer` strategy, strategies/tzer.py, fuzzes TIR jointly with TIR pass
sequences):

- `tir`: TIR node table, holes with their constraints, the expression/statement generator, mutators;
- `seeds`: PrimFuncs from legalized graphs and zoo models, plus the empty PrimFunc;
- `coverage`: pluggable coverage sources (IR state, Python lines of TVM, SanitizerCoverage counters);
- `runner`: the sandboxed worker side (passes, builds, runs, timings, coverage) and reproducer scripts.

`verify/`: translation validation of TIR transformations (the `dlcfuzz verify` commands).
The TIR pass table, its ordering rules and pass-sequence sampling are the compiler's
(backends/tvm/tir_passes.py, no TVM import).
"""
