"""TorchInductor's real options, as data: what per-test sampling draws from and minimization removes.

Every key below exists in torch 2.13's `torch._inductor.config` (`tests/test_inductor.py` checks
that against the installed release); values are the non-default settings worth testing.
Left out on purpose:
- unsafe math (`cpp.enable_unsafe_math_opt_flag`, `cpp.enable_floating_point_contract_flag`,
  `use_fast_math`): they license results that differ from IEEE evaluation, so comparing them for
  equality with the reference would report the option working as documented. They are a separate
  tolerance class, never sampled for equality comparisons.
- `cpp.inject_relu_bug_TESTING_ONLY`: the planted faults (configurations `inductor-planted-*`).
- GPU-only options (triton.*, cudagraphs): this backend compiles for the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# torch.compile modes that exist in 2.13 and mean something on the CPU ("reduce-overhead" and
# "max-autotune" add CUDA graphs only)
MODES: tuple[str, ...] = ("default", "lite", "max-autotune-no-cudagraphs")

# Inductor's split/cat pattern passes (fx_passes/split_cat.py's PRE_GRAD_PATTERNS and POST_GRAD_PATTERNS), off by
# default: `pre_grad_fusion_options` / `post_grad_fusion_options` name the passes to run (`{pass: {}}`). Every pass
# of the pattern matcher that runs on the CPU; left out: the group-batch fusions (not pattern rewrites) and
# `pad_aten_mm_pass` (pad_mm's check wants CUDA).
SPLIT_CAT_PRE_GRAD: tuple[str, ...] = (
    "normalization_pass", "einsum_to_pointwise_pass", "merge_getitem_cat_pass", "merge_splits_pass",
    "merge_stack_tahn_unbind_pass", "move_reshape_out_of_split_stack_pass", "mutate_cat_pass",
    "remove_split_with_size_one_pass", "split_cat_pass", "split_cat_to_slices_pass", "split_stack_to_cats_pass",
    "unbind_cat_to_view_pass", "unbind_stack_pass", "unbind_stack_to_slices_pass")
SPLIT_CAT_POST_GRAD: tuple[str, ...] = (
    "normalization_aten_pass", "decompose_mm_pass", "move_view_after_cat_aten_pass", "select_cat_aten_pass",
    "split_cat_aten_pass", "unbind_stack_aten_pass")
SPLIT_CAT_FUSIONS: dict[str, Any] = {
    "pre_grad_fusion_options": {name: {} for name in SPLIT_CAT_PRE_GRAD},
    "post_grad_fusion_options": {name: {} for name in SPLIT_CAT_POST_GRAD},
}


def fusion_knobs(passes: tuple[str, ...]) -> dict[str, Any]:
    """The Inductor configuration that runs `passes` (knobs.SPLIT_CAT_PRE_GRAD / SPLIT_CAT_POST_GRAD names) and the
    normalization pass of each level they are at, normalization first (the others match its normalized calls)."""
    pre = [p for p in passes if p in SPLIT_CAT_PRE_GRAD]
    post = [p for p in passes if p not in SPLIT_CAT_PRE_GRAD]
    out: dict[str, Any] = {}
    if pre:
        out["pre_grad_fusion_options"] = {p: {} for p in dict.fromkeys(["normalization_pass", *pre])}
    if post:
        out["post_grad_fusion_options"] = {p: {} for p in dict.fromkeys(["normalization_aten_pass", *post])}
    return out


# Inductor's freezing configuration: parameters folded as constants in an inference compile, then the freezing pattern
# passes (mkldnn weight packing, binary folding, the concatenation of linears sharing an input, which on the CPU also
# wants `cpp.enable_concat_linear`: off by default, its check refuses every CPU graph without it)
FREEZING: dict[str, Any] = {"freezing": True, "cpp.enable_concat_linear": True}

# torch._inductor.config key -> the non-default values sampled (the default is never listed)
INDUCTOR_KNOBS: dict[str, tuple[Any, ...]] = {
    **{key: (passes,) for key, passes in SPLIT_CAT_FUSIONS.items()},
    "cpp_wrapper": (True,),
    "freezing": (True,),
    "cpp.enable_concat_linear": (True,),
    "cpp.simdlen": (1, 256),  # 1: scalar code only; 256: AVX2 kernels where the machine has them
    "epilogue_fusion": (False,),
    "pattern_matcher": (False,),
    "aggressive_fusion": (True,),
    "split_reductions": (False,),
    "online_softmax": (False,),
    "loop_ordering_after_fusion": (False,),
    "joint_graph_constant_folding": (False,),
    "reorder_for_locality": (False,),
    "inplace_buffers": (False,),
    "allow_buffer_reuse": (False,),
    "max_fusion_size": (1, 8),
    "realize_opcount_threshold": (1,),
    "unroll_reductions_threshold": (1, 64),
    "constant_and_index_propagation": (False,),
    "permute_fusion": (True,),
    "cpp.min_chunk_size": (1,),
    "cpp.weight_prepack": (False,),
    "cpp.enable_loop_tail_vec": (False,),
    "cpp.enable_tiling_heuristics": (False,),
    "cpp.use_decompose_tanh": (True,),
    "layout_optimization": (False,),
    "comprehensive_padding": (False,),
    "combo_kernels": (True,),
    "split_cat_fx_passes": (False,),
    "decompose_mem_bound_mm": (True,),
}

UNSAFE_MATH: dict[str, Any] = {
    "cpp.enable_unsafe_math_opt_flag": True,
    "cpp.enable_floating_point_contract_flag": "fast",
}

FAULTS: tuple[str, ...] = ("accuracy", "compile_error", "runtime_error")  # cpp.inject_relu_bug_TESTING_ONLY


def sample_knobs(rng: np.random.Generator, max_knobs: int = 4) -> dict[str, Any]:
    """A random set of 1..max_knobs non-default options: the compile mode, dynamic shapes and
    torch._inductor.config keys (keys sorted, so equal sets serialize equally)."""
    keys = sorted(INDUCTOR_KNOBS)
    out: dict[str, Any] = {}
    n = int(rng.integers(1, max_knobs + 1))
    for k in rng.choice(len(keys) + 2, size=n, replace=False):
        k = int(k)
        if k == len(keys):
            out["mode"] = MODES[1 + int(rng.integers(len(MODES) - 1))]
        elif k == len(keys) + 1:
            out["dynamic"] = True
        else:
            values = INDUCTOR_KNOBS[keys[k]]
            v = values[int(rng.integers(len(values)))]
            out[keys[k]] = v.item() if hasattr(v, "item") else v
    return dict(sorted(out.items()))


def split_knobs(knobs: dict[str, Any]) -> tuple[str, bool | None, dict[str, Any]]:
    """(mode, dynamic, torch._inductor.config patch) of a knob set."""
    patch = {k: v for k, v in knobs.items() if k not in ("mode", "dynamic")}
    dynamic = knobs.get("dynamic")
    return str(knobs.get("mode", "default")), (bool(dynamic) if dynamic is not None else None), patch
