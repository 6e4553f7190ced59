"""Inductor's replacement patterns as seed programs (OATest applied to Inductor).

`register_replacement` traces a search function on example inputs to make each pattern; torch keeps the
function (in the pattern's check) but not the inputs. A fresh interpreter records every call's search
function, example inputs (shape, strides, dtype, requires_grad: fake tensors then), scalars and torch's
pattern name while Inductor's lazy initializers register them (fuse_attention's sfdp patterns, pad_mm,
the softmax, misc and mm patterns). Nothing of torch's source is copied: the search functions are taken
from the installed torch at run time.

Each recorded search function becomes seeds: the registered inputs, in every float dtype (float32, float16,
bfloat16, float64) and in the float dtypes as registered where they differ ("mixed": a float16 attention with a
float32 mask), at the registered sizes, at doubled ones, and with a 0-d scale tensor given as a Python float, for
inference and, where torch registered a training variant (inputs that require grad), for training.
Seeds of one kind compile several to a function (`run_batch`): one compile fires each one's rewrite.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import subprocess
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dlcfuzz.oracle.numeric import TOLERANCE, chebyshev, tolerance

FLOAT_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", "float64")
PYTHON_SCALE = 2.0  # the value of a 0-d scale given as a Python float (torch's traces hold no values)
MAX_GROWN_ELEMENTS = 1 << 20  # a doubled variant only where all inputs stay this small (a 3-D sfdp trace is 16M)


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    requires_grad: bool

    @property
    def contiguous(self) -> bool:
        return _strides(self.shape) == self.stride or 0 in self.shape


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A contiguous tensor's strides."""
    out, expect = [], 1
    for size in reversed(shape):
        out.append(expect)
        expect *= max(size, 1)
    return tuple(reversed(out))


@dataclasses.dataclass(frozen=True)
class Registration:
    """One register_replacement call, as recorded."""

    search: str  # "module:qualname" of the search function (the function a signature-fixing partial wraps)
    pattern_name: str | None
    argnames: tuple[str, ...]  # the registered signature's parameters the example inputs bind
    args: tuple[TensorSpec | float | int | bool | None, ...]  # example inputs, in `argnames` order
    kwargs: tuple[tuple[str, float | int | bool], ...]  # fixed keywords and scalar_workaround values
    training: bool  # traced with joint_fwd_bwd (inputs require grad)


@dataclasses.dataclass(frozen=True)
class PatternSeed:
    """A search function with one input variant: what a seed program calls."""

    search: str  # "module:qualname"
    variant: str  # e.g. "float16 grown training"
    argnames: tuple[str, ...]
    args: tuple[TensorSpec | float | int | bool | None, ...]
    kwargs: tuple[tuple[str, float | int | bool], ...]
    training: bool
    registered_as: tuple[str, ...]  # the pattern names torch registered from this function
    # a seed written for graph patterns (split_cat_seeds.py): the rewrites it targets (pattern_inventory names), and
    # the split/cat fusion passes it compiles with (knobs.fusion_knobs)
    rewrites: tuple[str, ...] = ()
    fusion_passes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.search.rpartition(":")[2].rpartition(".")[2]

    @property
    def dtype(self) -> str:
        return next((a.dtype for a in self.args if isinstance(a, TensorSpec) and a.dtype.startswith(("float", "bfloat"))),
                    "none")

    @property
    def random(self) -> bool:
        """Whether the function draws random numbers (dropout with p > 0, randperm): a rewrite may draw them
        differently, so only shapes and dtypes are compared."""
        if dict(self.kwargs).get("dropout_p", 0.0):
            return True
        return "rand" in inspect.getsource(search_callable(self.search))

    @property
    def draws_dropout(self) -> bool:
        """Whether it trains with a dropout probability above 0: torch traced these rewrites (fuse_attention's
        training patterns with dropout) with Inductor's random decompositions (rand_like, gt, mul), which only
        `fallback_random=False` leaves in the graph (fallback_random keeps aten.native_dropout), so the seed compiles
        with it (`compile_knobs`); eager and compiled then draw differently, which `random` already allows for."""
        return self.training and bool(dict(self.kwargs).get("dropout_p", 0.0))

    @property
    def kind(self) -> tuple[Any, ...]:
        """What seeds compiled as one function share (`run_batch`, `batches`): training or not, random or not, frozen
        or not, the compile's knobs."""
        return (self.training, self.random, self.frozen, self.fusion_passes, self.draws_dropout)

    def compile_knobs(self) -> dict[str, Any]:
        """The Inductor configuration beyond the backend's own: a written seed's split/cat fusion passes
        (knobs.fusion_knobs), `fallback_random=False` for a seed that `draws_dropout`."""
        knobs: dict[str, Any] = {"fallback_random": False} if self.draws_dropout else {}
        if self.fusion_passes:
            from dlcfuzz.backends.inductor.knobs import fusion_knobs

            knobs.update(fusion_knobs(self.fusion_passes))
        return knobs

    @property
    def frozen(self) -> bool:
        """Whether the seed's rewrites sit in Inductor's freezing passes (patterns.PASS_GATES): it runs frozen, its
        tensor arguments after the first as parameters, compiled with knobs.FREEZING (`run_batch`)."""
        from dlcfuzz.backends.inductor.patterns import pattern_inventory

        inventory = pattern_inventory()
        gates = {inventory[n].gate for n in pattern_names(self) if n in inventory}
        return gates == {"freezing=True"}

    def function(self) -> Callable[..., Any]:
        """The search function called on the seed's tensors and scalars positionally, fixed keywords bound."""
        fn, names, fixed = traceable(search_callable(self.search)), self.argnames, dict(self.kwargs)

        def seed_program(*inputs: Any) -> Any:
            return fn(**dict(zip(names, inputs, strict=True)), **fixed)

        return seed_program


# ---- recording (in a fresh interpreter: the initializers run once per process) -------------------------------
def _spec(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return {"shape": list(x.shape), "stride": list(x.stride()), "dtype": str(x.dtype).removeprefix("torch."),
                "requires_grad": bool(x.requires_grad)}
    if isinstance(x, (bool, int, float)) or x is None:
        return x
    raise TypeError(f"example input of type {type(x).__name__}")


def record_registrations() -> list[dict[str, Any]]:
    """Every register_replacement call of Inductor's initializers in this (fresh) process."""
    from torch._inductor import pattern_matcher as pm

    from dlcfuzz.backends.inductor.patterns import _closure, _initialize

    original = pm.register_replacement
    calls: list[dict[str, Any]] = []

    @functools.wraps(original)
    def recording(search_fn: Any, replace_fn: Any, example_inputs: Any, trace_fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            argnames = list(inspect.signature(search_fn).parameters)
            fn, fixed = getattr(search_fn, "__func__", search_fn), {}
            partial = _closure(fn).get("partial_func")  # fuse_attention's partialize_and_update_signature
            if isinstance(partial, functools.partial):
                fn, fixed = partial.func, dict(partial.keywords)
            # the example inputs bind the parameters scalar_workaround does not (torch's _trace_args_for_initial_trace)
            scalars = dict(kwargs.get("scalar_workaround") or (args[2] if len(args) > 2 and args[2] else {}))
            fixed.update(scalars)
            bound = [n for n in argnames if n not in scalars][:len(example_inputs)]
            calls.append({"search": f"{fn.__module__}:{fn.__qualname__}", "pattern_name": kwargs.get("pattern_name"),
                          "argnames": bound, "args": [_spec(x) for x in example_inputs],
                          "kwargs": fixed, "training": getattr(trace_fn, "__name__", "") == "joint_fwd_bwd"})
        except TypeError:
            pass  # an input kind a seed cannot make (a list of tensors): that registration is no seed
        return original(search_fn, replace_fn, example_inputs, trace_fn, *args, **kwargs)

    pm.register_replacement = recording
    bound = [m for m in list(sys.modules.values()) if getattr(m, "register_replacement", None) is original]
    for module in bound:
        module.register_replacement = recording  # the modules that imported the name before
    try:
        _initialize()
    finally:
        pm.register_replacement = original
        for module in bound:
            module.register_replacement = original
    return calls


def _recorded_calls() -> list[dict[str, Any]]:
    """record_registrations() in a child interpreter (Inductor's initializers run once per process): ~6 CPU s,
    cached per torch release and recording code (this module and patterns.py) for the next process."""
    from importlib.metadata import version

    from dlcfuzz.cache import cache_root, cached_json

    here = Path(__file__)
    code = hashlib.sha1(here.read_bytes() + here.with_name("patterns.py").read_bytes()).hexdigest()[:10]
    release = "".join(c if c.isalnum() or c in "._-+" else "_" for c in version("torch"))

    def record() -> list[dict[str, Any]]:
        out = subprocess.run([sys.executable, "-m", "dlcfuzz.backends.inductor.pattern_seeds"], capture_output=True,
                             text=True, check=True, timeout=600)
        return json.loads(out.stdout.strip().splitlines()[-1])

    return cached_json(cache_root() / "inductor-patterns" / f"torch-{release}-{code}.json", record)


@functools.cache
def registrations() -> tuple[Registration, ...]:
    """The register_replacement calls of the installed torch (recorded in a child interpreter, cached)."""
    calls = _recorded_calls()
    return tuple(Registration(c["search"], c["pattern_name"], tuple(c["argnames"]),
                              tuple(TensorSpec(tuple(a["shape"]), tuple(a["stride"]), a["dtype"], a["requires_grad"])
                                    if isinstance(a, dict) else a for a in c["args"]),
                              tuple(sorted(c["kwargs"].items())), c["training"]) for c in calls)


# How a program reaches torch's search function by its name, the same in the runner and in a reproducer (which
# embeds this source: plain Python on the installed torch, nothing of torch's source copied). `traceable`: Dynamo
# skips (runs eagerly, and with fullgraph refuses) functions whose code lives in torch/_inductor, so the function as
# torch wrote it is given another file name, and so are the functions of its module it calls (`_sfdp_pattern_28`
# calls `_sfdp_pattern_4`), through a copy of the module's globals; code, defaults and closures are torch's.
PATTERN_SOURCE = '''
def _refiled(fn, namespace):
    code = fn.__code__.replace(co_filename=f"<inductor pattern {fn.__qualname__}>")
    new = types.FunctionType(code, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def traceable(fn):
    """`fn` with its code (and its module's functions it calls) filed under a name Dynamo traces."""
    source_file = fn.__code__.co_filename
    namespace = dict(fn.__globals__)
    for name, obj in list(namespace.items()):
        if isinstance(obj, types.FunctionType) and obj.__code__.co_filename == source_file:
            namespace[name] = _refiled(obj, namespace)
    return _refiled(fn, namespace)


def module_function(search):
    """The installed torch's function "module:qualname" (a module attribute)."""
    module, _, qualname = search.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def inductor_pattern(search):
    """torch's search function "module:qualname", traceable by Dynamo."""
    return traceable(module_function(search))
'''
_NS: dict[str, Any] = {"types": types, "importlib": importlib}
exec(PATTERN_SOURCE, _NS)  # noqa: S102 - our own source, shared with the reproducers
traceable: Callable[[Callable[..., Any]], Callable[..., Any]] = _NS["traceable"]
module_function: Callable[[str], Callable[..., Any]] = _NS["module_function"]
inductor_pattern: Callable[[str], Callable[..., Any]] = _NS["inductor_pattern"]


@functools.cache
def search_callable(search: str) -> Callable[..., Any]:
    """The installed torch's search function "module:qualname": a module attribute, or one defined inside an
    initializer (taken from the registered pattern's check)."""
    from torch._inductor.pattern_matcher import ReplacementPatternEntry

    from dlcfuzz.backends.inductor.patterns import registered_passes, search_function

    if "<locals>" not in search:
        return module_function(search)
    for p in registered_passes().values():
        for entries in p.patterns.values():
            for entry in entries:
                fn = search_function(entry) if isinstance(entry, ReplacementPatternEntry) else None
                fn = getattr(fn, "__func__", fn)
                if fn is not None and f"{fn.__module__}:{fn.__qualname__}" == search:
                    return fn
    raise LookupError(f"no registered search function {search}")


# ---- seeds ---------------------------------------------------------------------------------------------------
def _with_dtype(args: tuple, dtype: str) -> tuple:
    return tuple(dataclasses.replace(a, dtype=dtype) if isinstance(a, TensorSpec) and
                 a.dtype.startswith(("float", "bfloat")) else a for a in args)


def _grown(args: tuple) -> tuple | None:
    """Every size above 1 doubled (one map for all inputs, so equal sizes stay equal), contiguous inputs only."""
    tensors = [a for a in args if isinstance(a, TensorSpec)]
    if not tensors or not all(t.contiguous for t in tensors):
        return None
    if sum(int(np.prod(t.shape)) * 2 ** sum(s > 1 for s in t.shape) for t in tensors) > MAX_GROWN_ELEMENTS:
        return None
    out = []
    for a in args:
        if isinstance(a, TensorSpec):
            shape = tuple(s * 2 if s > 1 else s for s in a.shape)
            a = dataclasses.replace(a, shape=shape, stride=_strides(shape))
        out.append(a)
    return tuple(out)


def python_scalars(args: tuple) -> tuple | None:
    """0-d float tensors (torch traces a scale as one) as a Python float, the form most programs write and the
    one several attention fusions require (their checks refuse a tensor scale); None when there is none."""
    if not any(isinstance(a, TensorSpec) and a.shape == () and a.dtype.startswith("float") for a in args):
        return None
    return tuple(PYTHON_SCALE if isinstance(a, TensorSpec) and a.shape == () and a.dtype.startswith("float") else a
                 for a in args)


def pattern_seeds() -> Iterator[PatternSeed]:
    """Every seed (module docstring), in registration order; variants eager torch rejects are kept (the
    bench checks them eagerly first)."""
    names: dict[str, list[str]] = {}
    for r in registrations():
        if r.pattern_name:
            names.setdefault(r.search, []).append(r.pattern_name)
    seen: set[tuple] = set()
    for r in registrations():
        sizes = [("registered", r.args)]
        if (grown := _grown(r.args)) is not None:
            sizes.append(("grown", grown))
        if (scalar := python_scalars(r.args)) is not None:
            sizes.append(("scalar", scalar))
        for size, args in sizes:
            floats = {a.dtype for a in args if isinstance(a, TensorSpec) and a.dtype.startswith(("float", "bfloat"))}
            # "mixed": the float dtypes as registered where they differ (a float16 attention with a float32 mask or
            # scale: torch's `_half_mask_fp32` traces), which no single dtype gives
            dtypes = (FLOAT_DTYPES + (("mixed",) if len(floats) > 1 else ())) if floats else ("none",)
            for dtype in dtypes:
                typed = _with_dtype(args, dtype) if dtype not in ("none", "mixed") else args
                key = (r.search, typed, r.kwargs, r.training)
                if key in seen:
                    continue
                seen.add(key)
                variant = " ".join(x for x in (dtype, size, "training" if r.training else "inference"))
                yield PatternSeed(r.search, variant, r.argnames, typed, r.kwargs, r.training,
                                  tuple(names.get(r.search, ())))


# ---- seeds spliced into generated programs (the programs strategy; backends/inductor/programs.py's "pattern") ----
SPLICE_ELEMENTS = 1 << 16  # a spliced seed's tensors hold at most this many elements in all (sfdp_13's 16M do not)
SPLICE_SCALE = 0.25  # a program's float inputs (eighths in [-4, 4]) scaled into [-1, 1] for the pattern
UNFIRED_WEIGHT = 3.0  # a search function with a rewrite not yet fired in the campaign is this much likelier


def pattern_names(seed: PatternSeed) -> tuple[str, ...]:
    """The rewrites (patterns.pattern_inventory names) torch registered from the seed's search function, or those a
    written seed targets."""
    if seed.rewrites:
        return seed.rewrites
    module, _, qualname = seed.search.partition(":")
    short = module.removeprefix("torch._inductor.fx_passes.")
    return tuple(f"{short}.{n}" for n in seed.registered_as) or (f"{short}.{qualname}",)


def _spliceable(seed: PatternSeed) -> bool:
    """A seed a program can call by name and judge against eager: a module attribute (a reproducer imports it),
    deterministic once its dropout probability is 0, float and bool tensors only, small."""
    tensors = [a for a in seed.args if isinstance(a, TensorSpec)]
    return ("<locals>" not in seed.search and not seed.random and bool(tensors)
            and all(t.dtype == "bool" or t.dtype.startswith(("float", "bfloat")) for t in tensors)
            and sum(int(np.prod(t.shape)) for t in tensors) <= SPLICE_ELEMENTS)


@functools.cache
def splice_seeds() -> tuple[PatternSeed, ...]:
    """Every seed variant a program may call (`_spliceable`): a training variant's dropout probability is set to 0
    (the rewrite matches any probability; a draw of 0 keeps eager and compiled equal), variants that then coincide
    are one."""
    out: dict[tuple, PatternSeed] = {}
    for seed in pattern_seeds():
        kwargs = tuple((k, 0.0 if k == "dropout_p" else v) for k, v in seed.kwargs)
        seed = dataclasses.replace(seed, kwargs=kwargs)
        if _spliceable(seed):
            out.setdefault((seed.search, seed.args, kwargs, seed.training), seed)
    return tuple(out.values())


TENSOR_SCALE_WEIGHT = 0.25  # a variant with a 0-d float tensor argument: most fusions' checks refuse a tensor scale


def splice_target(seed: PatternSeed) -> str:
    """The rewrite the seed's variant is likeliest to fire: the name of the function's registration (training or
    inference as the seed) whose dtype class (float16/bfloat16: torch's "half" traces) and batch of 1 ("bs1")
    agree most with the seed's."""
    def traits(args: tuple) -> tuple[bool, bool]:
        tensors = [a for a in args if isinstance(a, TensorSpec) and a.shape]
        return (any(t.dtype in ("float16", "bfloat16") for t in tensors), bool(tensors) and tensors[0].shape[0] == 1)

    half, bs1 = traits(seed.args)
    regs = [r for r in registrations() if r.search == seed.search and r.training == seed.training and r.pattern_name]
    if not regs:
        return pattern_names(seed)[0]
    best = max(regs, key=lambda r: 2 * (traits(r.args)[0] == half) + (traits(r.args)[1] == bs1))
    module = seed.search.partition(":")[0].removeprefix("torch._inductor.fx_passes.")
    return f"{module}.{best.pattern_name}"


def choose_splice(rng: np.random.Generator, fired: set[str] | frozenset[str] = frozenset()) -> PatternSeed:
    """A seed to splice: a search function, then one of its variants, each UNFIRED_WEIGHT times likelier where a
    rewrite it registered (the function) or its likeliest rewrite (`splice_target`, the variant) is not in
    `fired`, the campaign's fired rewrites; a variant with a tensor scale TENSOR_SCALE_WEIGHT times as likely."""
    by_fn: dict[str, list[PatternSeed]] = {}
    for seed in splice_seeds():
        by_fn.setdefault(seed.search, []).append(seed)
    fns = sorted(by_fn)
    w = np.asarray([UNFIRED_WEIGHT if set(pattern_names(by_fn[f][0])) - fired else 1.0 for f in fns])
    variants = by_fn[fns[int(rng.choice(len(fns), p=w / w.sum()))]]
    v = np.asarray([(UNFIRED_WEIGHT if splice_target(s) not in fired else 1.0)
                    * (TENSOR_SCALE_WEIGHT if any(isinstance(a, TensorSpec) and not a.shape and a.dtype != "bool"
                                                  for a in s.args) else 1.0) for s in variants])
    return variants[int(rng.choice(len(variants), p=v / v.sum()))]


def _dim_order(spec: TensorSpec) -> list[int]:
    """The axes from outermost to innermost in memory (a registered non-contiguous input, e.g. sfdp_28's, becomes
    its dimension order without the padding)."""
    return sorted(range(len(spec.shape)), key=lambda d: (-spec.stride[d], d)) if spec.stride else \
        list(range(len(spec.shape)))


def splice_statement(seed: PatternSeed, pool: Any, out: str) -> Any:
    """The program statement `out = search(bridged args...)` (op "pattern"): each tensor argument bridged from a
    program value the pool picks (its elements repeated to the registered shape, in the registered dimension
    order, cast to the variant's dtype; floats scaled by SPLICE_SCALE, a 0-d scale moved into [1, 2]), scalars and
    fixed keywords as registered; a tuple result gives its first tensor."""
    from dlcfuzz.programs.core import Stmt

    args: list[Any] = []
    bridges: list[Any] = []
    for a in seed.args:
        if isinstance(a, TensorSpec):
            source = pool.pick()
            args.append(source.name)
            bridges.append([list(a.shape), _dim_order(a), a.dtype, int(np.prod(source.shape))])
        else:
            args.append(a)
            bridges.append(None)
    returns_tuple, dtype = _result_type(seed)
    # a bfloat16 result is cast to float32: the program's values, and the arrays the oracle compares, have no bfloat16
    return Stmt("pattern", args, {"search": seed.search, "variant": seed.variant, "argnames": list(seed.argnames),
                                  "bridges": bridges, "kwargs": dict(seed.kwargs), "tuple": returns_tuple,
                                  "cast": "float32" if dtype == "bfloat16" else None}, out)


@functools.cache
def _result_type(seed: PatternSeed) -> tuple[bool, str]:
    """Whether the search function returns a tuple, and its (first) result's dtype, from a run on meta tensors."""
    import torch

    meta = [torch.empty(a.shape, dtype=getattr(torch, a.dtype), device="meta") if isinstance(a, TensorSpec) else a
            for a in seed.args]
    with torch.no_grad():
        out = seed.function()(*meta)
    first = out[0] if isinstance(out, (tuple, list)) else out
    return isinstance(out, (tuple, list)), str(first.dtype).removeprefix("torch.")


def make_inputs(seed: PatternSeed, rng: np.random.Generator) -> list[Any]:
    """Torch values for the seed's arguments: floats from a standard normal (scaled down, so softmax and
    exp stay finite), integers in [0, 4), booleans fair; scalars as registered; strides as registered."""
    import torch

    out: list[Any] = []
    for a in seed.args:
        if not isinstance(a, TensorSpec):
            out.append(a)
            continue
        dtype = getattr(torch, a.dtype)
        if a.dtype.startswith(("float", "bfloat")):
            values = torch.from_numpy(np.asarray(rng.standard_normal(a.shape) * 0.5)).to(dtype)
        elif a.dtype == "bool":
            values = torch.from_numpy(np.asarray(rng.random(a.shape) < 0.5))
        else:
            values = torch.from_numpy(np.asarray(rng.integers(0, 4, a.shape))).to(dtype)
        t = torch.empty_strided(a.shape, a.stride, dtype=dtype).copy_(values) if a.stride else values
        out.append(t.requires_grad_(True) if seed.training and a.requires_grad else t)
    return out


# ---- a seed as a test: eager vs Inductor, float64 reference -----------------------------------------------
# bfloat16 keeps 3 fewer mantissa bits than float16: 8x float16's tolerance (oracle.numeric has no bfloat16)
BFLOAT16_TOLERANCE = 8 * TOLERANCE["float16"]


@dataclasses.dataclass
class SeedRun:
    """One seed compiled and judged: the rewrites that fired, and the verdict ("ok", "mismatch", "error")."""

    seed: PatternSeed
    fired: dict[str, int]
    verdict: str
    detail: str = ""


def _tensors(out: Any) -> list[Any]:
    import torch
    import torch.utils._pytree as pytree

    return [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def _fresh(inputs: list[Any], dtype: Any = None) -> list[Any]:
    """Copies of the inputs (strides kept), leaves again where they require grad; float ones cast to `dtype`."""
    out = []
    for x in inputs:
        if hasattr(x, "detach"):
            y = x.detach().clone()
            if dtype is not None and y.is_floating_point():
                y = y.to(dtype)
            x = y.requires_grad_(x.requires_grad)
        out.append(x)
    return out


def _results(fn: Callable[..., Any], inputs: list[Any], counts: Sequence[int], training: bool
             ) -> list[tuple[int, Any]]:
    """The outputs, and in training the gradients of the inputs that require grad (of the float outputs' sum),
    the random generator seeded first (fallback_random: eager and compiled draw alike, but for a seed that
    `draws_dropout`); each with the seed it
    belongs to (`fn` takes `counts[k]` arguments of seed k and returns one result per seed: `_batched`)."""
    import torch

    owner = [k for k, n in enumerate(counts) for _ in range(n)]
    torch.manual_seed(0)
    with torch.set_grad_enabled(training):
        outs = [(k, t) for k, out in enumerate(fn(*inputs)) for t in _tensors(out)]
        if training:
            floats = [o for _, o in outs if o.is_floating_point() and o.requires_grad]
            leaves = [(k, x) for k, x in zip(owner, inputs, strict=True) if getattr(x, "requires_grad", False)]
            if floats and leaves:
                grads = torch.autograd.grad(sum(o.sum() for o in floats), [x for _, x in leaves], allow_unused=True)
                outs += [(k, g) for (k, _), g in zip(leaves, grads, strict=True) if g is not None]
    return [(k, o.detach()) for k, o in outs]


def _mismatch(got: Any, eager: Any, ref: Any | None, random: bool) -> str | None:
    """Why the compiled value `got` is wrong, or None: shape and dtype as eager; then (not random) integers
    and booleans exactly as eager, floats no further from the float64 reference than the dtype's tolerance
    plus twice eager's own distance, non-finite where eager is."""
    import torch

    if got.shape != eager.shape or got.dtype != eager.dtype:
        return f"{tuple(got.shape)} {got.dtype} != eager {tuple(eager.shape)} {eager.dtype}"
    if random:
        return None
    if not got.is_floating_point():
        return None if torch.equal(got, eager) else "integer values differ from eager"
    g, e = got.to(torch.float64).numpy(), eager.to(torch.float64).numpy()
    if (np.isfinite(g) != np.isfinite(e)).any():
        return "non-finite values where eager has finite ones (or the reverse)"
    if ref is None:
        return None
    r = ref.to(torch.float64).numpy()
    dtype = str(got.dtype).removeprefix("torch.")
    tol = BFLOAT16_TOLERANCE if dtype == "bfloat16" else tolerance(dtype)
    d_got, d_eager = chebyshev(g, r), chebyshev(e, r)
    return f"distance to float64 {d_got:.3g} > {tol:.3g} + 2 x eager's {d_eager:.3g}" if d_got > tol + 2 * d_eager \
        else None


def run_seed(backend: Any, seed: PatternSeed, rng: np.random.Generator) -> SeedRun:
    """Compile the seed with `backend` (InductorBackend.compile_function: the campaign's compile) while recording
    the rewrites that fire, run it and eager on the same inputs, and judge the outputs (and gradients)."""
    return run_batch(backend, [seed], rng)[0]


BATCH_SEEDS = 8  # seeds compiled as one function by `run_batch`: one compile fires each one's rewrite


def _batched(seeds: Sequence[PatternSeed]) -> Callable[..., Any]:
    """One function that calls every seed's search function on its own slice of the arguments and returns their
    results, a tuple (no value shared: a rewrite matches inside one seed's subgraph, as when it is compiled
    alone)."""
    fns = [s.function() for s in seeds]
    counts = [len(s.args) for s in seeds]

    def seed_batch(*inputs: Any) -> tuple[Any, ...]:
        out, at = [], 0
        for fn, n in zip(fns, counts, strict=True):
            out.append(fn(*inputs[at:at + n]))
            at += n
        return tuple(out)

    return seed_batch


def run_batch(backend: Any, seeds: Sequence[PatternSeed], rng: np.random.Generator) -> list[SeedRun]:
    """Seeds of one kind (all inference or all training; all random or none) compiled as one function with
    `backend` while recording the rewrites that fire (one compile fires what the seeds' own compiles would:
    on the CPU the compile, not the run, is the cost), run with eager on the same inputs, each seed's outputs
    (and gradients) judged against eager's with a float64 reference. A SeedRun per seed, each with the batch's
    fired rewrites. Where a batch of several fails to compile or to run, each seed runs alone (`run_seed`), so
    that the error names its seed."""
    import torch

    from dlcfuzz.backends.inductor.knobs import FREEZING
    from dlcfuzz.backends.inductor.patterns import recording_fired

    if len({s.kind for s in seeds}) != 1:
        raise ValueError("a batch holds seeds of one kind (PatternSeed.kind): all training or none, all random or "
                         "none, all frozen or none, the same compile knobs")
    training, random, frozen = seeds[0].training, seeds[0].random, seeds[0].frozen
    fn, counts = _batched(seeds), [len(s.args) for s in seeds]
    inputs = [x for s in seeds for x in make_inputs(s, rng)]
    eager = _results(fn, _fresh(inputs), counts, training)
    # no float64 reference where it is eager itself, or where random draws make only shapes and dtypes comparable
    wide = not random and any(s.dtype not in ("none", "float64") for s in seeds)
    ref = _results(fn, _fresh(inputs, torch.float64), counts, training) if wide else None

    def alone(verdict: str, detail: str, fired: dict[str, int]) -> list[SeedRun]:
        if len(seeds) > 1:
            return [run_seed(backend, s, np.random.default_rng(rng.integers(1 << 31))) for s in seeds]
        return [SeedRun(seeds[0], fired, verdict, detail)]

    with recording_fired() as fired:
        try:
            if frozen:
                compiled = _frozen(backend, fn, [len(s.args) for s in seeds], _fresh(inputs), FREEZING)
            else:
                compiled = backend.compile_function(fn, _fresh(inputs), grad=training, knobs=seeds[0].compile_knobs())
        except Exception as e:  # noqa: BLE001 - a compile failure is a verdict
            return alone("error", f"{type(e).__name__}: {str(e)[:500]}", dict(fired))
    try:
        got = _results(compiled, _fresh(inputs), counts, training)
    except Exception as e:  # noqa: BLE001 - a failure of the compiled function is a verdict
        return alone("error", f"{type(e).__name__}: {str(e)[:500]}", dict(fired))
    if len(got) != len(eager) or [k for k, _ in got] != [k for k, _ in eager]:
        return alone("mismatch", f"{len(got)} results != eager's {len(eager)}", dict(fired))
    runs = [SeedRun(s, dict(fired), "ok") for s in seeds]
    for i, ((k, g), (_, e)) in enumerate(zip(got, eager, strict=True)):
        why = _mismatch(g, e, ref[i][1] if ref is not None else None, random)
        if why and runs[k].verdict == "ok":
            index = sum(owner == k for owner, _ in got[:i])  # numbered within the seed, as when compiled alone
            runs[k] = SeedRun(seeds[k], dict(fired), "mismatch", f"result {index}: {why}"
                              + (f" (compiled in a batch of {len(seeds)})" if len(seeds) > 1 else ""))
    return runs


def _frozen(backend: Any, fn: Callable[..., Any], counts: Sequence[int], inputs: list[Any],
            knobs: dict[str, Any]) -> Callable[..., Any]:
    """`fn` compiled as a frozen model: each seed's tensor arguments after its first are parameters (globals of
    the compiled function: Dynamo lifts them as parameters, which `freezing` folds as constants; a plain tensor
    would stay an input), the first ones its inputs. The result takes all the arguments, as `fn` (the parameters'
    places read nothing: they hold the compile's values, which the callers' fresh copies equal)."""
    import torch

    first = set(np.cumsum([0, *counts[:-1]]).tolist())
    params = {k: torch.nn.Parameter(x.detach().clone(), requires_grad=False) for k, x in enumerate(inputs)
              if k not in first and hasattr(x, "detach")}
    free = [k for k in range(len(inputs)) if k not in params]

    def frozen_model(*args: Any) -> Any:
        given = dict(zip(free, args, strict=True))
        return fn(*[params[k] if k in params else given[k] for k in range(len(inputs))])

    compiled = backend.compile_function(frozen_model, [inputs[k] for k in free], knobs=knobs)
    return lambda *args: compiled(*[args[k] for k in free])


def batches(seeds: Sequence[PatternSeed], size: int = BATCH_SEEDS) -> Iterator[list[PatternSeed]]:
    """The seeds in batches of at most `size` that `run_batch` takes (each `PatternSeed.kind` batched apart, in the
    seeds' order), each batch as it fills or, partial, once 4 x `size` seeds followed its first one, then the partial
    ones."""
    pending: dict[tuple[Any, ...], list[PatternSeed]] = {}
    opened: dict[tuple[Any, ...], int] = {}  # where each pending batch's first seed is in the order
    for at, s in enumerate(seeds):
        kind = s.kind
        if kind not in pending:
            opened[kind] = at
        batch = pending.setdefault(kind, [])
        batch.append(s)
        if len(batch) == size:
            yield pending.pop(kind)
        # a rare kind (the frozen seeds) does not wait for seeds far down the order: its batch goes out partial
        for late in [k for k in pending if at - opened[k] >= 4 * size]:
            yield pending.pop(late)
    yield from pending.values()


def main() -> None:
    print(json.dumps(record_registrations()))


if __name__ == "__main__":
    main()
