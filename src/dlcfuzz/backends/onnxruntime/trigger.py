"""Did an ONNXRuntime optimization fire on a test (OATest's trigger rates)? The optimized model
(dumped) is compared with the one optimized with the targeted transformer disabled; it fired when
they differ (ORT silently ignores unknown names in `disabled_optimizers`, so a wrong name reads as
"never fires", never as an error). Transformers that `disabled_optimizers` cannot tell that way are
observed otherwise (ORT_BY_REWRITE, ORT_MANDATORY, ORT_MASKED_BY below). Runs inside the sandboxed workers."""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from dlcfuzz.oracle.testcase import Config


class OptimizedBuild(Protocol):
    @property
    def optimized_model(self) -> bytes | None: ...  # the dumped optimized model (Config option "dump")


class OnnxCompiler(Protocol):
    """What the trigger check uses of the ONNXRuntime backend (backend.py's OnnxRuntimeBackend, which imports
    this module: a Protocol here, so that the two do not import each other)."""

    def compile_onnx(self, model_bytes: bytes, config: Config) -> OptimizedBuild: ...


def ort_signature(model_bytes: bytes | None) -> tuple:
    """What an optimized ONNX model is, for comparing two optimizations of one input, whatever the order its nodes
    are written in (ORT writes one model's nodes in different topological orders from build to build: an NCHWc Conv
    and the ReorderOutput of another branch swapped places in 2 of 10 builds of one oatest test, which made the trigger
    check's answer vary from run to run): each node by its kind, attributes and arity and, recursively, what its
    inputs are (graph inputs by position, initializers by shape and type: a digest of the node's whole upstream), the
    model by the sorted digests of its nodes and of its outputs, and its initializers' shapes."""
    import onnx

    if model_bytes is None:
        return ()
    m = onnx.load_from_string(model_bytes)
    value: dict[str, str] = {"": "absent"}  # tensor name -> what it is
    value.update({i.name: f"input{k}" for k, i in enumerate(m.graph.input)})
    value.update({i.name: f"initializer{tuple(i.dims)}:{i.data_type}" for i in m.graph.initializer})
    nodes: list[str] = []

    def describe(n: onnx.NodeProto) -> None:
        described = (n.domain, n.op_type, len(n.input), len(n.output),
                     tuple(sorted((a.name, str(onnx.helper.get_attribute_value(a))[:64]) for a in n.attribute)),
                     tuple(value.get(x, "unknown") for x in n.input))
        digest = hashlib.blake2b(repr(described).encode(), digest_size=16).hexdigest()
        value.update({o: f"{digest}:{k}" for k, o in enumerate(n.output)})
        nodes.append(digest)

    pending = list(m.graph.node)
    while pending:  # the dump's order is topological (one pass); a node read before its inputs' producers waits
        waiting = []
        for n in pending:
            if all(x in value for x in n.input):
                describe(n)
            else:
                waiting.append(n)
        if len(waiting) == len(pending):  # an input no node makes (a malformed model): taken as unknown
            describe(waiting.pop(0))
        pending = waiting
    inits = tuple(sorted((tuple(i.dims), i.data_type) for i in m.graph.initializer))
    return tuple(sorted(nodes)), tuple(value.get(o.name, "unknown") for o in m.graph.output), inits


# Optimizations that `disabled_optimizers` does not reach (the layout transformation runs the
# transpose optimizer itself): fired when the pattern's operators of these kinds are fewer after
# ORT_ENABLE_ALL than after ORT_DISABLE_ALL.
ORT_BY_REWRITE: dict[str, tuple[str, ...]] = {"TransposeOptimizer": ("Transpose",)}

# Transformers the session runs whatever the level and `disabled_optimizers` say (InferenceSession::TransformGraph:
# EnsureUniqueDQForNodeUnit before level 1, the float16 Cast insertion and the duplicate-Cast cleanup after
# partitioning): fired when the model ORT_DISABLE_ALL leaves has nodes of that kind that the model as given has not
# ("added": a Cast around a float16 node without a float16 kernel, a DequantizeLinear duplicated for its second
# consumer), or lacks some it has ("removed": a lossless Cast pair). Nodes are told apart by name, so a Cast inserted
# and one removed in the same model are each seen.
ORT_MANDATORY: dict[str, tuple[str, str]] = {
    "CastFloat16Transformer": ("Cast", "added"),
    "RemoveDuplicateCastTransformer": ("Cast", "removed"),
    "EnsureUniqueDQForNodeUnit": ("DequantizeLinear", "added"),
}

# Transformers whose rewrite an earlier one makes in their place, so that disabling them alone leaves the same model:
# checked with those earlier ones disabled in both builds (fired = rewrote the graph in a session without them, which
# `disabled_optimizers` is for). ConstantFolding folds the Cast under a Shape, the Cast of a float16 initializer and
# a Range of constants before level 2; the level-1 TransposeOptimizer leaves its CPU-EP instance no transposes;
# NchwcTransformer (x86-64) takes the Conv + Add + activation that ConvAddActivationFusion, registered after it,
# would fuse; the pairs QDQFinalCleanupTransformer removes (DequantizeLinear -> QuantizeLinear of one scale) go in
# DoubleQDQPairsRemover and in both transpose optimizers' QDQ cleanup first; MatMulAddFusion makes the MatMul + bias
# Add a Gemm, which the DequantizeLinear -> MatMulNBits action takes with its bias, before MatMulNBitsFusion would
# move the Add into the MatMulNBits, and the q, k, v and output projections' MatMul + Add into Gemms (with Reshapes)
# before AttentionFusion would match them; ConstantFolding folds the Unsqueeze of a constant UnsqueezeElimination
# folds into the initializer.
ORT_MASKED_BY: dict[str, tuple[str, ...]] = {
    "PreShapeNodeElimination": ("ConstantFolding",),
    "FuseFp16InitializerToFp32NodeTransformer": ("ConstantFolding",),
    "GatherToSliceFusion": ("ConstantFolding",),
    "TransposeOptimizer_CPUExecutionProvider": ("TransposeOptimizer",),
    "ConvAddActivationFusion": ("NchwcTransformer",),
    "QDQFinalCleanupTransformer": ("DoubleQDQPairsRemover", "TransposeOptimizer",
                                   "TransposeOptimizer_CPUExecutionProvider"),
    "MatMulNBitsFusion": ("MatMulAddFusion",),
    "AttentionFusion": ("MatMulAddFusion",),
    "EmbedLayerNormFusion": ("MatMulAddFusion",),
    "UnsqueezeElimination": ("ConstantFolding",),
}


def _count(model_bytes: bytes | None, kinds: tuple[str, ...]) -> int:
    import onnx

    return 0 if model_bytes is None else sum(n.op_type in kinds for n in onnx.load_from_string(model_bytes).graph.node)


def _names(model_bytes: bytes | None, kind: str) -> Counter[str]:
    import onnx

    if model_bytes is None:
        return Counter()
    return Counter(n.name for n in onnx.load_from_string(model_bytes).graph.node if n.op_type == kind)


def mandatory_fired(as_given: bytes, unoptimized: bytes | None, target: str) -> bool:
    """Whether a transformer of ORT_MANDATORY changed the model ORT_DISABLE_ALL leaves (`unoptimized`, dumped)."""
    kind, change = ORT_MANDATORY[target]
    before, after = _names(as_given, kind), _names(unoptimized, kind)
    return unoptimized is not None and bool(after - before if change == "added" else before - after)


def ort_fired(backend: OnnxCompiler, model_bytes: bytes, targets: list[str], options: dict[str, Any] | None = None
              ) -> dict[str, bool]:
    """target -> whether disabling it changes the optimized model.

    Checked at `options`' level (default all), then at ORT_ENABLE_EXTENDED for the targets that did not fire
    there: the layout transformers of level 3 (NchwcTransformer) absorb activations themselves, so a fusion that
    fired at level 2 can leave the same final model as when it is disabled. Level 2 runs the same way inside level
    3, so firing there is firing in the optimized build too. At the options' level each target is built disabled
    alone (most fire there: group testing cost more builds than it saved, measured over oatest tests); at level
    extended the rest are group-tested (`fired_alone`: most of them fire at neither level). A transformer of
    ORT_MASKED_BY is checked with its maskers disabled in both builds; one of ORT_MANDATORY (never disabled) by
    the model ORT_DISABLE_ALL leaves against the model as given."""
    disabled = list((options or {}).get("disabled_optimizers", []))
    top = (options or {}).get("opt_level", "all")
    out = {t: False for t in targets}
    # (level, maskers disabled) -> the optimized model's signature with the targets on: one build each
    enabled: dict[tuple[str, tuple[str, ...]], tuple] = {}
    by_rewrite = [t for t in targets if t in ORT_BY_REWRITE]
    mandatory = [t for t in targets if t in ORT_MANDATORY]
    if by_rewrite or mandatory:
        dumps = [backend.compile_onnx(model_bytes, Config("trigger", {**(options or {}), "opt_level": lvl, "dump": True}))
                 .optimized_model for lvl in ("disable", top)]
        for t in by_rewrite:
            out[t] = _count(dumps[1], ORT_BY_REWRITE[t]) < _count(dumps[0], ORT_BY_REWRITE[t])
        for t in mandatory:
            out[t] = mandatory_fired(model_bytes, dumps[0], t)
        targets = [t for t in targets if t not in ORT_BY_REWRITE and t not in ORT_MANDATORY]
        if not targets:
            return out
        enabled[(top, ())] = ort_signature(dumps[1])  # the same build as the loop's at that level: not made twice
    for stage, level in enumerate(dict.fromkeys((top, "extended"))):  # once where the options' level is extended
        base = {**(options or {}), "opt_level": level, "dump": True}
        by_maskers: dict[tuple[str, ...], list[str]] = {}
        for t in targets:
            if not out[t]:
                by_maskers.setdefault(ORT_MASKED_BY.get(t, ()), []).append(t)
        for maskers, group in by_maskers.items():
            on = {**base, "disabled_optimizers": [*disabled, *maskers]}
            if (level, maskers) not in enabled:
                enabled[(level, maskers)] = ort_signature(backend.compile_onnx(model_bytes, Config("trigger", on))
                                                          .optimized_model)
            changes = functools.partial(_disabling_changes, backend, model_bytes, on, enabled[(level, maskers)])
            for t in [t for t in group if changes([t])] if stage == 0 else fired_alone(group, changes):
                out[t] = True
        if all(out[t] for t in targets):
            break
    return out


def _disabling_changes(backend: OnnxCompiler, model_bytes: bytes, on: dict[str, Any], on_signature: tuple,
                       names: list[str]) -> bool:
    """Whether the model built with `names` disabled too differs from the one built with options `on`."""
    off = {**on, "disabled_optimizers": [*on["disabled_optimizers"], *names]}
    return ort_signature(backend.compile_onnx(model_bytes, Config("trigger-off", off)).optimized_model) != on_signature


def fired_alone(group: list[str], changes: Callable[[list[str]], bool]) -> list[str]:
    """Those of `group` whose disabling alone changes the optimized model (`changes(names)`: whether the model built
    with `names` disabled differs from the enabled one), by group testing: a group whose disabling changes nothing
    holds none (one build for the lot: most targets left for level extended fire at neither level), one that changes it is
    split in halves, down to single targets, whose answer is the definition (a transformer can fire in the group's
    build only because another, disabled with it, no longer took the rewrite first).

    The one assumption: disabling more transformers never restores exactly the enabled model when one of them fired
    alone (another transformer undoing, to the node and attribute, what disabling the first one changed). Checked
    against the target-by-target check over the 1,500 tests of test_fuzz_the_fuzzer's oatest campaigns and 250
    models of ORT's optimizer-test corpus with every reachable transformer targeted: the same answers
    (docs/architecture.md)."""
    if not group or not changes(group):
        return []
    if len(group) == 1:
        return list(group)
    half = len(group) // 2
    return fired_alone(group[:half], changes) + fired_alone(group[half:], changes)
