"""Seed programs for Inductor's split/cat graph rewrites (fx_passes/split_cat.py, decompose_mem_bound_mm.py).

These rewrites are graph patterns behind `pre_grad_fusion_options` / `post_grad_fusion_options` (knobs.SPLIT_CAT_FUSIONS):
torch registers them with `register_graph_pattern`, so there is no search function or example input to record
(pattern_seeds.py seeds only `register_replacement` calls). Each program below is written here (our own code, not
torch's) from the shape the pattern's documentation names: a split whose getitems feed a cat, an unbind whose
getitems feed a stack, a split of a split, and so on; at the pre-grad level the calls are torch functions as Dynamo
records them (torch.split, torch.cat, operator.getitem), at the post-grad level the aten operators they decompose
to. Each seed compiles with the passes it targets alone (and the normalization pass that the other passes of its
level expect first), so that no other pass rewrites its shape first, and is judged as every seed is
(pattern_seeds.run_batch: eager, a float64 reference, the compiled function).

Not reached (torch 2.13, CPU): `merge_unbind_stack_aten` wants aten.select nodes feeding unsqueezes and a cat, which
an unbind or indexing followed by a stack does not leave in the post-grad graph, and `move_view_after_cat` wants
aten.reshape.default nodes, which AOTAutograd decomposes to views.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import torch

from dlcfuzz.backends.inductor.pattern_seeds import PatternSeed, TensorSpec, _strides

MODULE = __name__


# ---- pre-grad: torch functions and methods as Dynamo records them ------------------------------------------------
def split_sections_positional(x):
    """torch.split with its sections and dim positional: normalize_split_default rewrites them to keywords."""
    a, b, c = torch.split(x, [2, 2, 4], 1)
    return a * 2.0, b + 1.0, c - 0.5


def split_method_int(x):
    """Tensor.split with an int size (a call_method): normalize_split_default makes it torch.split with sections."""
    a, b = x.split(4, dim=1)
    return a * b


def split_whole(x):
    """A split with one section the size of its dim: remove_split_with_size_one drops it."""
    (y,) = torch.split(x, [8], dim=1)
    return y * 3.0


def unbind_positional(x):
    """torch.unbind with dim positional: normalize_unbind_default."""
    a, b, c, d = torch.unbind(x, 1)
    return a + b, c * d


def cat_positional(x, y):
    """torch.cat with dim positional: normalize_cat_default."""
    return torch.cat((x, y), 1) * 2.0


def stack_positional(x, y):
    """torch.stack with dim positional: normalize_stack_default."""
    return torch.stack((x, y), 1) - 1.0


def squeeze_method(x):
    """Tensor.squeeze with a dim (a call_method): normalize_squeeze_default."""
    return x[:, :1].squeeze(1) * 2.0


def reshape_method(x):
    """Tensor.reshape (a call_method): normalize_reshape_default."""
    return x.reshape(x.shape[0] * 2, -1) + 1.0


def clamp_method(x):
    """Tensor.clamp and torch.clamp with positional bounds: normalize_clamp_default."""
    return x.clamp(-0.5, 0.5) + torch.clamp(x, -0.25, 0.75)


def detach_method(x):
    """Tensor.detach (a call_method): normalize_detach_default."""
    return x.detach() * 2.0 + x


def split_of_split(x):
    """A getitem of a split split again along the same dim: merge_splits makes one split."""
    a, b = torch.split(x, [4, 4], dim=1)
    c, d = torch.split(a, [1, 3], dim=1)
    return c * 2.0, d + 1.0, b - 1.0


def split_squeeze(x):
    """A split into pieces of 1, each squeezed along the split dim: merge_split_squeeze makes an unbind."""
    pieces = torch.split(x, 1, dim=1)
    return [torch.squeeze(p, 1) * float(i + 1) for i, p in enumerate(pieces)]


def unbind_stack(x):
    """An unbind's getitems stacked again along its dim: merge_unbind_stack removes both."""
    a, b, c, d = torch.unbind(x, dim=1)
    return torch.stack([a, b, c, d], dim=1) * 2.0


def split_cat_whole_and_other(x, y):
    """All of a split's getitems concatenated in order with another tensor: simplify_split_cat."""
    a, b, c = torch.split(x, [2, 2, 4], dim=1)
    return torch.cat([a, b, c, y], dim=1) * 2.0


def split_cat_consecutive(x):
    """Consecutive getitems of a split concatenated along its dim, the rest used apart: merge_getitem_cat and
    mutate_cat_node (each in its own pass) turn the cat into a slice of the input."""
    a, b, c = torch.split(x, [2, 2, 4], dim=1)
    return torch.cat([a, b], dim=1) * 2.0, c + 1.0


def split_many_cat(x):
    """Eleven of a split's twelve getitems concatenated along its dim (at least the passes' threshold of 10):
    split_cat_to_slices makes it one slice of the input."""
    pieces = torch.split(x, [2] * 12, dim=1)
    return torch.cat(pieces[:11], dim=1) * 2.0, pieces[11] + 1.0


def unbind_cat(x):
    """An unbind's getitems concatenated along another dim: unbind_cat_to_view makes a view of the input."""
    a, b, c, d = torch.unbind(x, dim=1)
    return torch.cat([a, b, c, d], dim=1) * 2.0


def split_many_stack(x):
    """Eleven equal getitems of a split stacked: split_stack_to_cats makes them a slice and a view."""
    pieces = torch.split(x, [2] * 12, dim=1)
    return torch.stack(pieces[:11], dim=1) * 2.0, pieces[11] + 1.0


def unbind_many_stack(x):
    """All of an unbind's getitems stacked again along its dim: unbind_stack_to_slices."""
    return torch.stack(torch.unbind(x, dim=1), dim=1) * 2.0


def unbind_stack_other_dim(x):
    """An unbind's getitems stacked along another dim: unbind_stack_to_slices."""
    a, b, c, d = torch.unbind(x, dim=1)
    return torch.stack([a, b, c, d], dim=2) + 1.0


def split_reshape_stack(x):
    """A split's getitems reshaped (torch.reshape) and stacked: move_reshape_out_of_split_stack."""
    a, b = torch.split(x, [4, 4], dim=1)
    return torch.stack([torch.reshape(a, (-1, 2, 2)), torch.reshape(b, (-1, 2, 2))], dim=1) * 2.0


def einsum_bmm_add(x, w, b):
    """einsum "bni,bnij->bnj" (a batched vector-matrix product) plus a bias: replace_einsum_to_pointwise."""
    return torch.functional.einsum("bni,bnij->bnj", x, w) + b


# ---- post-grad: the aten operators the calls decompose to (split.Tensor, split_with_sizes, select, cat, mm) ----------
def split_int_cat(x):
    """A split by an int size (aten.split.Tensor after AOTAutograd), its pieces concatenated again:
    normalize_split_default_aten and normalize_cat_default_aten."""
    a, b = torch.split(x, 4, dim=1)
    return torch.cat([a * 2.0, b], dim=1)


def split_many_cat_aten(x, y):
    """Eleven of a split's twelve getitems (aten.split_with_sizes) concatenated with another tensor:
    merge_split_cat_aten."""
    pieces = torch.split(x, [2] * 12, dim=1)
    return torch.cat([*pieces[:11], y], dim=1) * 2.0, pieces[11] + 1.0


def select_cat(x):
    """Selects of one input (aten.select.int) concatenated: merge_select_cat_aten."""
    return torch.cat([x[:, 0], x[:, 1], x[:, 2], x[:, 3]], dim=1) * 2.0


def mm_row(x, w):
    """A one-row matrix product (aten.mm, on the CPU decomposed where the first dim is 1): decompose_mm."""
    return torch.mm(x, w)


def bmm_one(x, w):
    """A batched matrix product of batch 1 (aten.bmm): decompose_bmm."""
    return torch.bmm(x, w)


def addmm_row(b, x, w):
    """A one-row matrix product with a bias (aten.addmm): decompose_addmm."""
    return torch.addmm(b, x, w)


# The passes a batch of seeds compiles with (knobs.SPLIT_CAT_PRE_GRAD or knobs.SPLIT_CAT_POST_GRAD names, in the order they
# run; knobs.fusion_knobs adds each level's normalization pass first). Seeds whose shapes no other pass of a group matches
# share it, so that one compile (pattern_seeds.run_batch) fires each one's rewrite; passes that match the same shape
# (a cat of a split's getitems: merge_getitem_cat, mutate_cat_node, split_cat_to_slices, simplify_split_cat) are in
# different groups.
PASS_GROUPS: dict[str, tuple[str, ...]] = {
    "normalization": ("normalization_pass",),
    "split-unbind": ("remove_split_with_size_one_pass", "merge_splits_pass", "unbind_stack_pass",
                     "move_reshape_out_of_split_stack_pass", "einsum_to_pointwise_pass"),
    "split-cat": ("split_cat_pass", "unbind_cat_to_view_pass"),
    "getitem-cat": ("merge_getitem_cat_pass", "unbind_stack_to_slices_pass"),
    "mutate-cat": ("mutate_cat_pass",),
    "slices": ("split_cat_to_slices_pass", "split_stack_to_cats_pass"),
    "unbind-stack-slices": ("unbind_stack_to_slices_pass",),
    "aten": ("split_cat_aten_pass", "select_cat_aten_pass", "decompose_mm_pass"),
}

# (seed function, input shapes, the rewrites it targets (patterns.pattern_inventory names), its PASS_GROUPS key)
SEEDS: tuple[tuple[str, tuple[tuple[int, ...], ...], tuple[str, ...], str], ...] = (
    ("split_sections_positional", ((4, 8),), ("split_cat.normalize_split_default",), "normalization"),
    ("split_method_int", ((4, 8),), ("split_cat.normalize_split_default",), "normalization"),
    ("unbind_positional", ((3, 4, 5),), ("split_cat.normalize_unbind_default",), "normalization"),
    ("cat_positional", ((4, 3), (4, 5)), ("split_cat.normalize_cat_default",), "normalization"),
    ("stack_positional", ((4, 3), (4, 3)), ("split_cat.normalize_stack_default",), "normalization"),
    ("squeeze_method", ((4, 3, 5),), ("split_cat.normalize_squeeze_default",), "normalization"),
    ("reshape_method", ((4, 6),), ("split_cat.normalize_reshape_default",), "normalization"),
    ("clamp_method", ((4, 6),), ("split_cat.normalize_clamp_default",), "normalization"),
    ("detach_method", ((4, 6),), ("split_cat.normalize_detach_default",), "normalization"),
    ("split_whole", ((4, 8),), ("split_cat.remove_split_with_size_one",), "split-unbind"),
    ("split_of_split", ((4, 8),), ("split_cat.merge_splits",), "split-unbind"),
    ("unbind_stack", ((3, 4, 5),), ("split_cat.merge_unbind_stack",), "split-unbind"),
    ("split_reshape_stack", ((4, 8),), ("split_cat.move_reshape_out_of_split_stack",), "split-unbind"),
    ("einsum_bmm_add", ((2, 3, 4), (2, 3, 4, 5), (5,)), ("split_cat.replace_einsum_to_pointwise",), "split-unbind"),
    ("split_squeeze", ((4, 3, 5),), ("split_cat.merge_split_squeeze",), "split-cat"),
    ("split_cat_whole_and_other", ((4, 8), (4, 3)), ("split_cat.simplify_split_cat",), "split-cat"),
    ("unbind_cat", ((3, 4, 5),), ("split_cat.unbind_cat_to_view",), "split-cat"),
    ("split_cat_consecutive", ((4, 8),), ("split_cat.merge_getitem_cat",), "getitem-cat"),
    ("unbind_many_stack", ((3, 4, 5),), ("split_cat.unbind_stack_to_slices",), "getitem-cat"),
    ("split_cat_consecutive", ((4, 8),), ("split_cat.mutate_cat_node",), "mutate-cat"),
    ("split_many_cat", ((4, 24),), ("split_cat.split_cat_to_slices",), "slices"),
    ("split_many_stack", ((4, 24),), ("split_cat.split_stack_to_cats",), "slices"),
    # its own group: Inductor's rewrite fails the compile (a finding), and a failing batch reruns each seed alone
    ("unbind_stack_other_dim", ((3, 4, 5),), ("split_cat.unbind_stack_to_slices",), "unbind-stack-slices"),
    ("split_int_cat", ((4, 8),), ("split_cat.normalize_split_default_aten", "split_cat.normalize_cat_default_aten"),
     "aten"),
    ("split_many_cat_aten", ((4, 24), (4, 3)), ("split_cat.merge_split_cat_aten",
                                                "split_cat.normalize_split_with_size_default_aten"), "aten"),
    ("select_cat", ((3, 4, 5),), ("split_cat.merge_select_cat_aten",), "aten"),
    ("mm_row", ((1, 16), (16, 8)), ("decompose_mem_bound_mm.decompose_mm",), "aten"),
    ("bmm_one", ((1, 4, 16), (1, 16, 8)), ("decompose_mem_bound_mm.decompose_bmm",), "aten"),
    ("addmm_row", ((24,), (1, 32), (32, 24)), ("decompose_mem_bound_mm.decompose_addmm",), "aten"),
)


def split_cat_seeds() -> Iterator[PatternSeed]:
    """A float32 inference seed per SEEDS row (variant "float32 written inference"), compiled with its group's passes."""
    for fn, shapes, rewrites, group in SEEDS:
        args = tuple(TensorSpec(shape, _strides(shape), "float32", False) for shape in shapes)
        argnames = tuple(inspect.signature(globals()[fn]).parameters)
        yield PatternSeed(f"{MODULE}:{fn}", "float32 written inference", argnames, args, (), False, (),
                          rewrites=rewrites, fusion_passes=PASS_GROUPS[group])
