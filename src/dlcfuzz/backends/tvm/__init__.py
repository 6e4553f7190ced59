"""TVM (Relax, and TIR for the tzer strategy) as a compiler under test: `backend.py` (the Backend),
`passes.py` (the Relax pass table), `tir_passes.py` (the TIR pass table), `ordering.py` (one checker
and repairer of pass orders for both), `gaps.py` (known gaps), `reproducer.py` (standalone scripts),
`trigger.py` (which passes changed a module), `function_rewrites.py` (HirGen's three function rewrites
of a Relax module), `pytest_plugin.py` (records the pass calls of TVM's own tests, for pattern extraction).

Importing this package, `passes.py` or `tir_passes.py` does not import tvm (strategies sample pass
sequences without loading the compiler); `backend.py`, `trigger.py` and the scripts do.
"""
