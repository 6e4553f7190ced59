"""OATest: optimization-aware test synthesis.

pattern.py (patterns, holes, pattern files), library.py (the built-in patterns with their tags),
extract.py (patterns from ONNX test models and from pytest runs; pytest_plugin.py records TVM pass
calls, relax_import.py converts Relax blocks), synthesize.py (splicing with reuse, re-concretization
and bridges; the seed pool), trigger.py + worker.py (did the targeted optimization fire), dedup.py
(ddmin over optimizations), campaign.py (the hooks `campaign/loop.py` calls).
"""
