"""Plug-ins for tests/test_engine.py: a strategy and a compiler, each one class in this one file plus
one registration line. The campaign's workers import this module (it registered them), so the
compiler also exists there."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.backends import register_backend
from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.single import single_op_graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import get_op
from dlcfuzz.strategies import Option, Test, register_strategy
from dlcfuzz.strategies.graph import GraphStrategy, RandomStrategy


class OneOpStrategy(GraphStrategy):
    """Graphs of one operator on a random float32 matrix."""

    name = "one-op"
    summary = "one operator per graph (an example plug-in)"
    options = (Option("op", "abs", "the operator"),)

    def make_test(self, seq: int, seed: int) -> Test:
        rng = np.random.default_rng(seed)
        g = single_op_graph(get_op(self.params["op"]), rng, TensorType("float32", (2, int(rng.integers(1, 5)))))
        return self.test(seq, self.test_case(g, sample_inputs(g, rng), seed))


class AbsPlusOneBackend(OnnxRuntimeBackend):
    """ONNXRuntime whose optimized build returns every output plus one when the graph has an Abs."""

    name = "abs-plus-one"

    def build(self, lowered: bytes, g: Any, config: Any) -> Any:
        compiled = super().build(lowered, g, config)
        if config.options.get("opt_level") != "all" or "abs" not in g.ops_used():
            return compiled

        class PlusOne:
            def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
                return [o + np.ones_like(o) for o in compiled.run(inputs)]

        return PlusOne()


class AbsRejectBackend(OnnxRuntimeBackend):
    """ONNXRuntime whose optimized build rejects every graph with an Abs as an invalid model (a
    validity rejection the unoptimized build does not make: an inconsistent rejection)."""

    name = "abs-reject"

    def build(self, lowered: bytes, g: Any, config: Any) -> Any:
        if config.options.get("opt_level") == "all" and "abs" in g.ops_used():
            raise RuntimeError("[ONNXRuntimeError] : 10 : INVALID_GRAPH : planted rejection of Abs")
        return super().build(lowered, g, config)


class FlakyRandomStrategy(RandomStrategy):
    """`random` whose generator raises for one test number in ten: a planted internal error."""

    name = "flaky-random"

    def make_test(self, seq: int, seed: int) -> Test:
        if seq % 10 == 3:
            raise ValueError(f"planted internal error at test {seq}")
        return super().make_test(seq, seed)


register_strategy("one-op", OneOpStrategy)
register_backend("abs-plus-one", AbsPlusOneBackend)
register_backend("abs-reject", AbsRejectBackend)
register_strategy("flaky-random", FlakyRandomStrategy)
