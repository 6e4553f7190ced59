"""Planted-fault backends: ONNXRuntime wrapped so that one configuration misbehaves on one operator.

Used to prove the oracles (each fault must be found, attributed, reduced and reproduced).
Name syntax: "planted:FAULT@OP", e.g. "planted:segfault@relu". The fault fires only in the
optimized configuration ("ort-all") and only when the graph contains OP, like a real
optimization bug. FAULT is one of: segfault, abort, hang, alloc, raise, wrong (output 0 of the
whole graph is off by one), stale (as wrong, but right on the process's first run: output memory
a kernel leaves unwritten), signed (as wrong, but only when the first element of the graph's first
input is negative: a value-dependent fault, which one input set per compile may miss), miseval (every ONNX node of OP's kind computes its result plus one: a
mis-evaluated operator, wherever it sits in the graph), fusion (a wrong optimization: OP names an
ONNXRuntime optimization of `PLANTED_FUSIONS`, e.g. "planted:fusion@MatMulAddFusion"; wherever its
pattern occurs, the pattern's result is off by one, unless `disabled_optimizers` names OP, like the
real optimizer's switch), narrow (every integer output of a graph with OP goes through float32, as
integer arithmetic routed through float: right within +-2^24 only, so only edge values show it), long
(the last element of output 0 off by one when an input or output of the graph has an axis longer than
LONG_AXIS: a vectorized loop's remainder gone wrong, which only long-axis tests meet), nan (every NaN of a float
output becomes 0, as a kernel compiled under a no-NaN assumption folds `x != x` away: only the non-finite profile's
tests show it), poison (as raise, and from then on every optimized build in the same process raises it too,
whatever its operators: a compiler whose state an error it survived left damaged).
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
from dlcfuzz.ir.graph import Graph

FAULTS = ("segfault", "abort", "hang", "alloc", "raise", "wrong", "stale", "signed", "miseval", "fusion", "none",
          "narrow", "long", "nan", "poison")
LONG_AXIS = 64  # the "long" fault shows above this length
_RUNS = [0]  # runs of a "stale" configuration in this process
_POISONED = [False]  # a "poison" fault fired in this process
# optimization -> (producer, consumer) ONNX op types of the pattern it rewrites
PLANTED_FUSIONS: dict[str, tuple[str, str]] = {
    "MatMulAddFusion": ("MatMul", "Add"),
    "ConvActivationFusion": ("Conv", "Relu"),
    "ConvBNFusion": ("Conv", "BatchNormalization"),
    "QuickGeluFusion": ("Sigmoid", "Mul"),
}


class _Wrong:
    """Output 0 off by one; `none`: output 0 is None; `stale`: correct on the process's first run only
    (as an ORT 1.20.1 kernel that left its output unwritten showed once the process reused memory);
    `signed`: only when the first element of the first input is negative."""

    def __init__(self, inner: Any, none: bool = False, stale: bool = False, signed: bool = False) -> None:
        self.inner = inner
        self.none = none
        self.stale = stale
        self.signed = signed

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        outs = self.inner.run(inputs)
        o = outs[0]
        first = next(iter(inputs.values()), np.zeros(1)).ravel()[:1]
        if self.signed and not (first.size and first[0] < 0):
            return outs
        if self.stale:
            _RUNS[0] += 1
            if _RUNS[0] == 1:
                return outs
        if self.none:  # what the ORT backend makes of a None output: np.asarray(None)
            outs[0] = np.asarray(None)
        else:
            outs[0] = (o + np.ones((), o.dtype)).astype(o.dtype) if o.dtype != np.bool_ else ~o
        return outs


class _Narrow:
    """Every integer output through float32 (exact within +-2^24; larger values round, and those past the
    dtype's range after rounding come back as the dtype's minimum, as a C++ float-to-int conversion does)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        outs = self.inner.run(inputs)
        with np.errstate(invalid="ignore", over="ignore"):
            return [o.astype(np.float32).astype(o.dtype) if o.dtype.kind in "iu" else o for o in outs]


class _NanLost:
    """Every NaN of a float output becomes 0."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [np.where(np.isnan(o), np.zeros((), o.dtype), o) if o.dtype.kind == "f" else o
                for o in self.inner.run(inputs)]


class _LongWrong:
    """The last element of output 0 off by one when an input or output has an axis over LONG_AXIS."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        outs = self.inner.run(inputs)
        longest = max((d for a in [*inputs.values(), *outs] for d in np.shape(a)), default=0)
        o = np.array(outs[0])
        if longest > LONG_AXIS and o.size and o.dtype != np.bool_:
            o.reshape(-1)[-1] += np.ones((), o.dtype)
            outs[0] = o
        return outs


MARK = "dlcfuzz-planted"


def misevaluate(model_bytes: bytes, op: str, only_marked: bool = False) -> bytes:
    """The ONNX model with output 0 of every node of kind `op` (case and '_' ignored) plus one; with
    `only_marked`, of every node whose doc_string is MARK instead."""
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load_from_string(model_bytes)
    kind = op.replace("_", "").lower()
    inferred = onnx.shape_inference.infer_shapes(m).graph
    types = {v.name: v.type.tensor_type.elem_type for v in [*inferred.value_info, *inferred.input, *inferred.output]}
    nodes = []
    for k, n in enumerate(m.graph.node):
        nodes.append(n)
        hit = n.doc_string == MARK if only_marked else n.op_type.lower() == kind
        if not hit or n.output[0] not in types:
            continue
        out, raw, one = n.output[0], f"planted_raw_{k}", f"planted_one_{k}"
        n.output[0] = raw
        dtype = helper.tensor_dtype_to_np_dtype(types[out])
        m.graph.initializer.append(numpy_helper.from_array(np.ones((), dtype), one))
        nodes.append(helper.make_node("Add", [raw, one], [out]))
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m.SerializeToString()


def misfuse(model_bytes: bytes, optimization: str) -> bytes:
    """The ONNX model with the output of every instance of the optimization's pattern plus one: a
    producer -> consumer edge of the two op types, rewritten wrongly where the pattern is present."""
    import onnx

    producer, consumer = PLANTED_FUSIONS[optimization]
    m = onnx.load_from_string(model_bytes)
    made = {o for n in m.graph.node if n.op_type == producer for o in n.output}
    hits = [k for k, n in enumerate(m.graph.node) if n.op_type == consumer and any(i in made for i in n.input)]
    if not hits:
        return model_bytes
    for k in hits:
        m.graph.node[k].doc_string = MARK
    return misevaluate(m.SerializeToString(), consumer, only_marked=True)


class PlantedBackend(OnnxRuntimeBackend):
    def __init__(self, fault: str, op: str) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown planted fault {fault!r} (choose from {', '.join(FAULTS)})")
        if fault == "fusion" and op not in PLANTED_FUSIONS:
            raise ValueError(f"planted fusion: unknown optimization {op!r} (choose from {', '.join(PLANTED_FUSIONS)})")
        self.fault = fault
        self.op = op
        self.name = f"planted:{fault}@{op}"

    def version(self) -> str:
        return f"{super().version()} + planted {self.fault}@{self.op}"

    def probe_identity(self, config: Config) -> tuple[str, str]:
        if config.options.get("opt_level") != "all":  # every fault fires in the optimized configuration only
            return OnnxRuntimeBackend.name, super().version()
        return super().probe_identity(config)

    def build(self, lowered: bytes, g: Graph, config: Config) -> Any:
        if self.fault == "fusion":
            on = config.options.get("opt_level") == "all" and self.op not in config.options.get("disabled_optimizers", [])
            return super().build(misfuse(lowered, self.op) if on else lowered, g, config)
        if self.fault == "miseval" and config.options.get("opt_level") == "all":
            return super().build(misevaluate(lowered, self.op), g, config)
        compiled = super().build(lowered, g, config)
        if self.fault == "poison" and config.options.get("opt_level") == "all" and _POISONED[0]:
            raise RuntimeError(f"planted internal error in fusion of {self.op}")
        if config.options.get("opt_level") != "all" or self.op not in g.ops_used():
            return compiled
        if self.fault == "segfault":
            ctypes.string_at(0)
        elif self.fault == "abort":
            os.abort()
        elif self.fault == "hang":
            while True:
                time.sleep(1)
        elif self.fault == "alloc":
            hog = []
            while True:
                hog.append(bytearray(64 << 20))
                hog[-1][::4096] = b"x" * len(hog[-1][::4096])
        elif self.fault in ("raise", "poison"):
            _POISONED[0] = self.fault == "poison"
            raise RuntimeError(f"planted internal error in fusion of {self.op}")
        elif self.fault == "narrow":
            return _Narrow(compiled)
        elif self.fault == "long":
            return _LongWrong(compiled)
        elif self.fault == "nan":
            return _NanLost(compiled)
        return _Wrong(compiled, none=self.fault == "none", stale=self.fault == "stale", signed=self.fault == "signed")

    def reproducer(self, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str,
                   untyped_outputs: tuple[str, ...] = ()) -> str:
        """The planted fault exists only inside dlcfuzz: the script rebuilds this backend."""
        from dlcfuzz.backends.script import dlcfuzz_script
        from dlcfuzz.ir import dumps

        return dlcfuzz_script(self.name, dumps(g), inputs, expected, configs, category, title, detail, self.version())
