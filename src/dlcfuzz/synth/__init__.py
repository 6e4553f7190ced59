"""OATest: optimization-aware test synthesis.

pattern.py (patterns, holes, pattern files), library.py (the built-in patterns with their tags; with
the shipped mined ones, what oatest uses by default), extract.py (patterns from ONNX test models and
from pytest runs: TVM's pass calls are recorded by backends/tvm/pytest_plugin.py, its Relax blocks
converted by lower/relax_import.py), synthesize.py (splicing with reuse, re-concretization and
bridges; the seed pool). The strategy itself is strategies/oatest.py; whether a targeted
optimization fired and the minimal optimization set are each compiler's (`Backend.fired`,
`Backend.minimize_config` in backends/<compiler>/).
"""
