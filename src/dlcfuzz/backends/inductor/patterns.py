"""Inductor's pattern-matcher rewrites: the inventory the installed torch registers, and which fired.

Inventory: every `PatternEntry` in the `PatternMatcherPass` objects that torch._inductor's modules hold
(joint-graph, post-grad, pre-grad/split-cat, freezing, binary folding, replace-random, ...), after the
lazy initializers that register the attention (sfdp), pad_mm, misc, mkldnn and quantization patterns
have run. Nothing is listed by hand: a new torch release brings its own list.

A pattern's name is torch's own where it gives one (`register_replacement(pattern_name=...)`, e.g.
`fuse_attention._sfdp_pattern_1_inference`, one per traced variant), else the qualified name of its
search function (replacement patterns) or handler (lowering and graph patterns), without the
`torch._inductor.fx_passes.` prefix. One handler registered for several operator patterns (mkldnn's
unary fusions, quantization's post-op fusions) is one name: the rewrite, not its operator variants.

Fired: while a compile runs, the `apply` methods of the entry classes are wrapped, so a match that passed
its checks and was applied is counted by name. The FX graph and AOTAutograd caches are off meanwhile (a
cache hit skips the passes). A graph pattern counts when its handler ran, even if the handler then left
the graph as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import pkgutil
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

PREFIX = "torch._inductor.fx_passes."

# What switches a pass on, by where torch keeps it (module attribute, outermost first); the first prefix
# that matches wins. "default" passes run in every CPU compile with `pattern_matcher=True` (the default);
# the rest need the knob named (a torch._inductor.config key). A pattern in a default pass may still be
# limited by its own check (a device, dtype or packed-weight test): firing measures that.
PASS_GATES: tuple[tuple[str, str], ...] = (
    ("joint_graph.", "default"),
    ("post_grad.pass_patterns", "default"),
    ("replace_random.", "fallback_random=False"),
    ("freezing_patterns.", "freezing=True"),
    ("split_cat.PRE_GRAD_PATTERNS", "pre_grad_fusion_options"),
    ("split_cat.POST_GRAD_PATTERNS", "post_grad_fusion_options"),
    ("pre_grad.apply_gumbel_max_trick_pass", "apply_gumbel_max_trick"),
    ("pre_grad.efficient_conv_bn_eval_pass", "efficient_conv_bn_eval_fx_passes=True"),
    ("b2b_gemm.", "b2b_gemm_pass=True (CUDA only)"),
    ("reduced_atomic_contention.", "partitioned_scatter_enabled=True"),
)


# Rewrites whose own check refuses every CPU graph (torch 2.13's fx_passes), by name prefix: they are in the
# inventory (Y counts what torch registers) and out of reach of a CPU campaign whatever it compiles.
CPU_REFUSED: tuple[tuple[str, str], ...] = (
    ("pad_mm.", "pad_mm.should_pad_common: check_device wants CUDA or XPU tensors"),
    ("post_grad.prepare_softmax_pattern", "prepare_softmax_extra_check: online softmax only for Triton (CUDA, XPU)"),
    ("b2b_gemm.", "b2b_gemm_pass: CUDA only"),
)


def cpu_refusal(name: str) -> str | None:
    """Why the rewrite never applies on the CPU (CPU_REFUSED), or None."""
    return next((why for prefix, why in CPU_REFUSED if name.startswith(prefix)), None)


@dataclasses.dataclass(frozen=True)
class PatternInfo:
    """One registered rewrite: its name, the passes holding it, their gate, and how many entries
    (operator variants) torch registered under the name."""

    name: str
    kind: str  # "replacement", "lowering" or "graph" (the PatternEntry class)
    passes: tuple[str, ...]
    gate: str  # "default" or the config knob its passes need (PASS_GATES)
    entries: int


def _qualified(fn: Any) -> str:
    fn = getattr(fn, "func", fn)  # functools.partial
    module = getattr(fn, "__module__", None) or "?"
    name = f"{module}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def _closure(fn: Any) -> dict[str, Any]:
    cells = getattr(fn, "__closure__", None) or ()
    return {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars, cells, strict=False)}


def search_function(entry: Any) -> Any:
    """The search function a replacement pattern was traced from (register_replacement's `search_fn`, kept
    in the closure of the check it installs), or None."""
    return _closure(entry.extra_check).get("search_fn") if hasattr(entry.extra_check, "__code__") else None


def entry_name(entry: Any) -> str:
    """The stable name of a PatternEntry (module docstring)."""
    from torch._inductor.pattern_matcher import ReplacementPatternEntry

    if isinstance(entry, ReplacementPatternEntry):
        search = search_function(entry)
        if entry.pattern_name:  # torch's own name of this traced variant, under the search function's module
            module = getattr(getattr(search, "func", search), "__module__", "") or ""
            module = module[len(PREFIX):] if module.startswith(PREFIX) else module
            return f"{module}.{entry.pattern_name}" if module else entry.pattern_name
        return _qualified(search) if search else f"replacement:{entry.pattern!r}"[:120]
    return _qualified(entry.handler)


def _kind(entry: Any) -> str:
    return type(entry).__name__.replace("PatternEntry", "").lower() or "entry"


def _initialize() -> None:
    """Import every fx_passes module and run the lazy initializers that register patterns (each runs once
    per process; a compile would run them anyway)."""
    import torch._inductor.fx_passes as fx_passes

    for m in pkgutil.iter_modules(fx_passes.__path__):
        with contextlib.suppress(Exception):  # a module for a platform this install lacks
            importlib.import_module(f"{PREFIX}{m.name}")
    from torch._inductor.fx_passes import freezing_patterns, joint_graph, post_grad, pre_grad

    for init in (joint_graph.lazy_init, post_grad.lazy_init, pre_grad.lazy_init, freezing_patterns.lazy_init):
        init()


def registered_passes() -> dict[str, Any]:
    """Where torch keeps each PatternMatcherPass (`module.attribute[index]`, prefix stripped) -> the pass:
    module attributes, and lists or dicts of passes."""
    from torch._inductor.pattern_matcher import PatternMatcherPass

    _initialize()
    places: dict[int, list[str]] = {}
    passes: dict[int, Any] = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("torch._inductor") or module is None:
            continue
        short = module_name[len(PREFIX):] if module_name.startswith(PREFIX) else module_name
        for attr, value in list(vars(module).items()):
            if isinstance(value, PatternMatcherPass):
                found = [(f"{short}.{attr}", value)]
            elif isinstance(value, (list, tuple)):
                found = [(f"{short}.{attr}[{i}]", v) for i, v in enumerate(value) if isinstance(v, PatternMatcherPass)]
            elif isinstance(value, dict):
                found = [(f"{short}.{attr}[{k!r}]", v) for k, v in value.items() if isinstance(v, PatternMatcherPass)]
            else:
                continue
            for where, p in found:
                places.setdefault(id(p), []).append(where)
                passes[id(p)] = p
    # a pass imported into other modules is named where its gate is known (PASS_GATES), else alphabetically first
    return {min(names, key=lambda w: (_gate(w) == "other", w)): passes[key] for key, names in places.items()}


def _gate(where: str) -> str:
    return next((gate for prefix, gate in PASS_GATES if where.startswith(prefix)), "other")


@functools.cache
def pattern_inventory() -> dict[str, PatternInfo]:
    """name -> PatternInfo for every rewrite the installed torch registers (sorted by name)."""
    found: dict[str, dict[str, Any]] = {}
    for where, p in registered_passes().items():
        seen: set[int] = set()
        for entries in p.patterns.values():
            for entry in entries:
                if id(entry) in seen:
                    continue
                seen.add(id(entry))
                info = found.setdefault(entry_name(entry), {"kind": _kind(entry), "passes": set(), "entries": 0})
                info["passes"].add(where)
                info["entries"] += 1
    out = {}
    for name in sorted(found):
        info = found[name]
        gates = sorted({_gate(w) for w in info["passes"]})
        gate = "default" if "default" in gates else " or ".join(gates)
        out[name] = PatternInfo(name, info["kind"], tuple(sorted(info["passes"])), gate, info["entries"])
    return out


@contextlib.contextmanager
def recording_fired() -> Iterator[Counter[str]]:
    """Within the block, every pattern-matcher rewrite Inductor applies is counted by name (the yielded
    Counter). Wraps the entry classes' `apply` and turns the compile caches off (a hit skips the passes)."""
    import torch
    from torch._inductor import pattern_matcher as pm

    fired: Counter[str] = Counter()
    originals = {cls: cls.__dict__["apply"] for cls in (pm.LoweringPatternEntry, pm.GraphPatternEntry,
                                                        pm.ReplacementPatternEntry)}

    def wrap(apply: Any) -> Any:
        def counted(self: Any, match: Any, graph: Any, node: Any) -> None:
            fired[entry_name(self)] += 1
            return apply(self, match, graph, node)
        return counted

    for cls, apply in originals.items():
        cls.apply = wrap(apply)
    try:
        with torch._inductor.config.patch({"fx_graph_cache": False}), \
                torch._functorch.config.patch({"enable_autograd_cache": False}):
            yield fired
    finally:
        for cls, apply in originals.items():
            cls.apply = apply
