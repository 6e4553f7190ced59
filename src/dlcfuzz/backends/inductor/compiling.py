"""Compiling a Python callable with torch.compile as dlcfuzz does for every Inductor test (graphs and
programs): the worker's private cache folder, the ladder of torch.compile backends that attributes a
failure to a stage, the compile itself (`fallback_random=True`, `fullgraph=True`, a planted fault), and
compile errors as a maintainer reads them (scrubbed of per-worker paths, C++ errors without warnings)."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import torch

from dlcfuzz.backends.inductor.knobs import FAULTS, split_knobs

LADDER: tuple[str, ...] = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")

_CACHE_DIR: str | None = None

# Tests only (`shared_cache`): a folder that the processes which set up while it is named share as their
# Inductor cache instead of a private one; the process that named it keeps its own.
SHARED_CACHE_VARIABLE = "DLCFUZZ_INDUCTOR_SHARED_CACHE"
_SHARER: int | None = None


@contextlib.contextmanager
def shared_cache(folder: str) -> Iterator[None]:
    """Tests: the processes that set up meanwhile (`worker_setup`: a campaign's workers, forked after this) share
    `folder` as their Inductor cache, which its maker keeps or removes; this process keeps its own set-up.
    Campaigns of the same programs then build each kernel once: g++ is most of a small program's compile (a hit
    cut one from 1.1-3.7 to 0.3-1.5 CPU s). The FX graph and AOTAutograd caches stay off where a compile records
    its rewrites (`patterns.recording_fired`: every program's compile), so Inductor's passes run in every compile."""
    global _SHARER
    before = os.environ.get(SHARED_CACHE_VARIABLE)
    os.environ[SHARED_CACHE_VARIABLE], _SHARER = folder, os.getpid()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SHARED_CACHE_VARIABLE, None)
        else:
            os.environ[SHARED_CACHE_VARIABLE] = before


def worker_setup() -> None:
    """Once per process: one intra-op thread (OpenMP threads fight Inductor's compile workers on
    small machines; --jobs decides parallelism) and a private Inductor cache folder, removed at exit
    (campaigns neither read another's compiled kernels nor leave them in /tmp), or the folder
    SHARED_CACHE_VARIABLE names."""
    global _CACHE_DIR
    if _CACHE_DIR is None:
        shared = os.environ.get(SHARED_CACHE_VARIABLE) if os.getpid() != _SHARER else None
        if shared:
            _CACHE_DIR = shared
        else:
            _CACHE_DIR = tempfile.mkdtemp(prefix="dlcfuzz-inductor-")
            atexit.register(shutil.rmtree, _CACHE_DIR, True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = _CACHE_DIR

    torch.set_num_threads(1)
    # Inductor's compile_threads stays at its default: without Triton (CPU torch) it is a thread pool running g++
    # in this process, no compile-worker processes, and 1 measured no CPU gain (issue 35: 381 CPU s with the
    # default, 417 with 1, for test_inductor_seed_programs' two 12-test --jobs 2 campaigns at load ~12)


def before_fork() -> None:
    """Once in the zygote that forks a campaign's workers (exec/pool.py), what every worker's first compile
    would do again and is the same on the machine: Inductor's vector ISA probe (it compiles and loads ~4 small
    C++ programs: 6-7 CPU s where the cache folder is new, i.e. in every worker, whose folder is private), and
    the import of Inductor's code cache, which fixes the folder of its precompiled header (cpp_prefix.h,
    ~150 MB and ~7 CPU s of g++) from the temporary folder at import: here the machine's, as torch intends
    (`default_cache_dir()`: the header is keyed by its preprocessed text, the compiler and the flags), and not
    the pool's scratch folder a worker's TMPDIR points at, which built it again for every pool (each campaign
    and each reducer). Both are cached in this process, so a forked worker inherits them; neither starts a
    thread. Inductor's compiler modules are imported here too (~580 modules a worker's first compile imported:
    ~1 CPU s of it)."""
    import torch._inductor.codecache  # noqa: F401 - its import decides the precompiled header's folder
    import torch._inductor.compile_fx  # noqa: F401
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    pick_vec_isa()


def scrub(message: str) -> str:
    """A compiler message without this worker's cache folder and generated file names (they
    differ per worker and per graph, so they would split one finding into many)."""
    if _CACHE_DIR:
        message = message.replace(_CACHE_DIR, "$TORCHINDUCTOR_CACHE_DIR")
    return re.sub(r"\$TORCHINDUCTOR_CACHE_DIR/\S+", "$TORCHINDUCTOR_CACHE_DIR/<generated>", message)


_GCC_DIAGNOSTIC = re.compile(r"[:>] (fatal error|error|warning|note): (.*)")
_GCC_SOURCE = re.compile(r"^\s*\d*\s*\|")  # the quoted source line and its caret line


def summarize_cpp_compile_error(message: str) -> str:
    """A C++ compile error as a maintainer reads it: g++'s first error on the headline (it names the
    bug: "no matching function for call to 'max_propagate_nan(int&, short int&)'"; without it every
    CppCompileError would be one finding) and its output without the warnings (thousands of lines of
    ATen's vectorization headers' -Woverflow warnings buried the error: an 8,000-line finding)."""
    head, sep, output = message.partition("\nOutput:\n")
    if "CppCompileError" not in head or not sep:
        return message
    kept: list[str] = []
    context: list[str] = []  # "In file included from", "In function", "required from" lines: their diagnostic follows
    dropping, dropped, first_error = False, 0, None
    for line in output.split("\n"):
        m = _GCC_DIAGNOSTIC.search(line)
        if m:
            severity = m.group(1)
            if severity == "warning" or (severity == "note" and dropping):
                dropping, dropped = True, dropped + len(context) + 1
            else:
                dropping = False
                kept += [*context, line]
                if first_error is None and severity in ("error", "fatal error"):
                    first_error = m.group(2).strip()
            context = []
        elif _GCC_SOURCE.match(line) and not context:
            if dropping:
                dropped += 1
            else:
                kept.append(line)
        else:
            context.append(line)
    kept += context  # trailing text (e.g. torch's advice on TORCHDYNAMO_VERBOSE)
    first, _, rest = head.partition("\n")
    if first_error:
        first = f"{first}: {first_error}"
    note = f" ({dropped} lines of warnings left out)" if dropped else ""
    return f"{first}\n{rest}\nOutput{note}:\n" + "\n".join(kept)


def inductor_patch(knobs: dict[str, Any], fault: str | None) -> dict[str, Any]:
    """The torch._inductor.config patch a compile with `knobs` and a planted `fault` runs under."""
    patch = {"fallback_random": True, **split_knobs(knobs)[2]}
    if fault in FAULTS:  # Inductor's own planted faults (a program dialect's, e.g. "cond", live in the program)
        patch["cpp.inject_relu_bug_TESTING_ONLY"] = fault
    return patch


def compile_callable(fn: Callable[..., tuple], example_inputs: Callable[[], list[Any]], backend: str,
                     knobs: dict[str, Any], fault: str | None, grad: bool = False,
                     fullgraph: bool = True) -> Callable[..., tuple]:
    """`fn` compiled by torch.compile's `backend` with `knobs` (and a planted `fault`), under
    `fallback_random=True` and `fullgraph` (False: a program that breaks the graph on purpose);
    compilation forced by a first call on `example_inputs()` (with autograd on where `grad`: a training
    step's forward, whose backward AOTAutograd compiles too)."""
    if backend == "eager":  # torch.cond run eagerly compiles, the shapes kept concrete (`static_eager_conds`)
        return _static_conds(fn)
    mode, dynamic, _ = split_knobs(knobs)
    patch = inductor_patch(knobs, fault)
    torch.compiler.reset()  # no state from earlier tests (guards, recompile counts)
    kwargs: dict[str, Any] = {"backend": backend, "fullgraph": fullgraph, "dynamic": dynamic}
    if backend == "inductor" and mode != "default":
        kwargs["mode"] = mode
    compiled = torch.compile(fn, **kwargs)
    with torch._inductor.config.patch(patch), torch.set_grad_enabled(grad):
        compiled(*example_inputs())
    return _patched(compiled, patch)


def first_failing_stage(fn: Callable[..., tuple], example_inputs: Callable[[], list[Any]],
                        options: dict[str, Any], grad: bool = False, fullgraph: bool = True) -> str:
    """The first stage of the ladder eager -> ... -> options' backend whose compile (and example run)
    fails; "none" when the failure does not repeat."""
    knobs, fault = dict(options.get("knobs") or {}), options.get("fault")
    top = LADDER.index(options.get("backend", "inductor"))
    for stage in LADDER[:top + 1]:
        try:
            compile_callable(fn, example_inputs, stage, knobs if stage == "inductor" else
                             {k: v for k, v in knobs.items() if k == "dynamic"}, fault, grad, fullgraph)
        except Exception:  # noqa: BLE001 - any failure is the answer
            return stage
    return "none"


def _static_conds(fn: Callable[..., tuple]) -> Callable[..., tuple]:
    """`fn` run eagerly: its torch.cond calls traced with their concrete shapes, whatever earlier calls in the
    worker had (lower/torch's `static_eager_conds`)."""
    from dlcfuzz.lower.torch import static_eager_conds

    def call(*args: Any) -> tuple:
        with static_eager_conds():
            return fn(*args)

    return call


def _patched(compiled: Callable[..., tuple], patch: dict[str, Any]) -> Callable[..., tuple]:
    """Calls run under the same config patch (a recompile, e.g. on a guard miss, must see it)."""

    def call(*args: Any) -> tuple:
        with torch._inductor.config.patch(patch):
            return compiled(*args)

    return call
