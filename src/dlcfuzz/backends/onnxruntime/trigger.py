"""Did an ONNXRuntime optimization fire on a test (OATest's trigger rates)? The optimized model
(dumped) is compared with the one optimized with the targeted transformer disabled; it fired when
they differ (ORT silently ignores unknown names in `disabled_optimizers`, so a wrong name reads as
"never fires", never as an error). Runs inside the sandboxed workers."""

from __future__ import annotations

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
    """What an optimized ONNX model is, for comparing two optimizations of one input: node kinds in
    order, their attributes and arity, and the initializers' shapes."""
    import onnx

    if model_bytes is None:
        return ()
    m = onnx.load_from_string(model_bytes)
    nodes = tuple((n.domain, n.op_type, len(n.input), len(n.output),
                   tuple(sorted((a.name, str(onnx.helper.get_attribute_value(a))[:64]) for a in n.attribute)))
                  for n in m.graph.node)
    inits = tuple(sorted((tuple(i.dims), i.data_type) for i in m.graph.initializer))
    return nodes, inits


# Optimizations that `disabled_optimizers` does not reach (the layout transformation runs the
# transpose optimizer itself): fired when the pattern's operators of these kinds are fewer after
# ORT_ENABLE_ALL than after ORT_DISABLE_ALL.
ORT_BY_REWRITE: dict[str, tuple[str, ...]] = {"TransposeOptimizer": ("Transpose",)}


def _count(model_bytes: bytes | None, kinds: tuple[str, ...]) -> int:
    import onnx

    return 0 if model_bytes is None else sum(n.op_type in kinds for n in onnx.load_from_string(model_bytes).graph.node)


def ort_fired(backend: OnnxCompiler, model_bytes: bytes, targets: list[str], options: dict[str, Any] | None = None
              ) -> dict[str, bool]:
    """target -> whether disabling it changes the optimized model.

    Checked at ORT_ENABLE_EXTENDED first, then at `options`' level (default all): the layout
    transformers of level 3 (NchwcTransformer) absorb activations themselves, so a fusion that
    fired at level 2 can leave the same final model as when it is disabled. Level 2 runs the same
    way inside level 3, so firing there is firing in the optimized build too."""
    disabled = list((options or {}).get("disabled_optimizers", []))
    out = {t: False for t in targets}
    by_rewrite = [t for t in targets if t in ORT_BY_REWRITE]
    if by_rewrite:
        dumps = [backend.compile_onnx(model_bytes, Config("trigger", {**(options or {}), "opt_level": lvl, "dump": True}))
                 .optimized_model for lvl in ("disable", (options or {}).get("opt_level", "all"))]
        for t in by_rewrite:
            out[t] = _count(dumps[1], ORT_BY_REWRITE[t]) < _count(dumps[0], ORT_BY_REWRITE[t])
        targets = [t for t in targets if t not in ORT_BY_REWRITE]
        if not targets:
            return out
    for level in ("extended", (options or {}).get("opt_level", "all")):
        base = {**(options or {}), "opt_level": level, "dump": True}
        enabled = ort_signature(backend.compile_onnx(model_bytes, Config("trigger", base)).optimized_model)
        for t in targets:
            if not out[t]:
                off = {**base, "disabled_optimizers": [*disabled, t]}
                out[t] = ort_signature(backend.compile_onnx(model_bytes, Config("trigger-off", off)).optimized_model) \
                    != enabled
        if all(out[t] for t in targets) or level == "all":
            break
    return out
