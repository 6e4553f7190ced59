"""The worker side of a Tzer test: parse the PrimFunc, run the pass sequence (collecting coverage),
build every configuration for LLVM, run it on the same random inputs, time it.

A test (its store blob) is JSON: {"script": TVMScript of the PrimFunc, "passes": [pass names],
"seed": input seed, ...}. Configurations:
- lowest: the mandatory tail only (passes.MANDATORY), no optimization;
- mutated: the test's pass sequence, then the tail;
- default: `tvm.tirx.build(mod, target="llvm")` with TVM's own default pipeline.
Outputs are every buffer parameter after the call (any of them may be written).
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from dlcfuzz.backends.tvm.tir_passes import MANDATORY, PASSES, TirPass, instantiate
from dlcfuzz.ir.blob import pack, unpack

CONFIGS = ("lowest", "mutated", "default")
IDENTITY_PIPELINE = "dlcfuzz-identity"
PLANTED = "Planted:DropLastIteration"  # the planted pass bug (tests prove the oracle finds it)
# a planted pass that raises and leaves the process damaged: from then on every build of the same function with a
# pass sequence raises the same error, whatever the passes (a compiler's cache entry left broken by an error it
# survived); tests prove that a reduction checked in such a worker is not kept
POISON = "Planted:Poison"
POISON_ERROR = "planted internal error: a cached lowering of this function is broken"
_DAMAGED: set[int] = set()  # structural hashes of the functions a POISON pass damaged in this process


def encode_test(script: str, passes: list[str], seed: int, **meta: Any) -> bytes:
    return json.dumps({"script": script, "passes": list(passes), "seed": int(seed), **meta}, sort_keys=True).encode()


def decode_test(blob: bytes) -> dict[str, Any]:
    return json.loads(blob.decode())


def register_identity_pipeline() -> None:
    """A TIR pipeline that does nothing, so that tirx.build runs exactly the passes applied before it."""
    import tvm
    from tvm.tirx import compilation_pipeline as cp

    if IDENTITY_PIPELINE in cp.PIPELINE_MAP:
        return

    @tvm.transform.module_pass(opt_level=0)
    def identity(mod: Any, _ctx: Any) -> Any:
        return mod

    tvm.tirx.register_tir_pipeline(IDENTITY_PIPELINE, lambda: (identity, cp.finalize_host_passes, cp.finalize_device_passes))


def planted_pass() -> Any:
    """A wrapper around StmtSimplify that also drops the last iteration of every serial loop of
    extent 3: a semantics-breaking pass bug on one loop shape."""
    import tvm
    from tvm import tirx

    from dlcfuzz.tvm_tir.tir import dtype_of, get, node_kind, slots, with_slot

    def rewrite(n: Any) -> Any:
        out = n
        for s in slots(n):
            c = get(out, s)
            if isinstance(c, tirx.Stmt):
                new = rewrite(c)
                if not new.same_as(c):
                    out = with_slot(out, s, new)
        if node_kind(out) == "For" and out.kind == tirx.ForKind.SERIAL and node_kind(out.extent) == "IntImm" \
                and int(out.extent.value) == 3:
            out = with_slot(out, "extent", tirx.IntImm(dtype_of(out.extent), 2))
        return out

    @tirx.transform.prim_func_pass(opt_level=0, name=PLANTED)
    def drop_last(func: Any, _mod: Any, _ctx: Any) -> Any:
        func = tvm.ir.IRModule({"main": func})
        func = tirx.transform.StmtSimplify()(func)["main"]
        return func.with_body(rewrite(func.body))

    return drop_last


def poison_pass() -> Callable[[Any], Any]:
    """The POISON pass as the reproducer runs it: it raises (the damage it leaves lives in `build`)."""

    def poison(mod: Any) -> Any:
        raise RuntimeError(POISON_ERROR)

    return poison


def apply_pass(p: TirPass | str, mod: Any) -> Any:
    import tvm

    if isinstance(p, str):
        if p == PLANTED:
            return planted_pass()(mod)
        if p == POISON:
            return poison_pass()(mod)
        p = PASSES[p]
    with tvm.transform.PassContext(opt_level=3, config=p.config):
        return instantiate(p)(mod)


def sample_inputs(func: Any, seed: int) -> dict[str, np.ndarray]:
    """Small values: integer arithmetic of the generated programs stays far from overflow."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in func.params:
        shape, dt = tuple(int(d) for d in p.shape), str(p.dtype)
        if dt == "bool":
            a = rng.random(shape) < 0.5
        elif dt.startswith(("int", "uint")):
            a = rng.integers(0 if dt.startswith("uint") else -8, 9, size=shape).astype(dt)
        else:
            a = rng.uniform(-2, 2, size=shape).astype(dt if dt != "bfloat16" else "float32")
        out[p.name] = np.asarray(a)
    return out


def build(func: Any, config: str, passes: list[str], on_pass: Callable[[str, Any, Any], None] | None = None) -> Any:
    """Compile one configuration for LLVM; on_pass(name, before, after) sees every pass of the sequence."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    mod = tvm.IRModule({"main": func})
    if config == "default":
        return tirx.build(mod, target="llvm")
    register_identity_pipeline()
    llvm = tvm.target.Target("llvm")
    mod = tirx.transform.BindTarget(llvm.with_host(llvm))(mod)  # MakePackedAPI only wraps host functions
    if config == "mutated" and _DAMAGED and tvm_ffi.structural_hash(func) in _DAMAGED:
        poison_pass()(mod)  # a POISON pass ran on this function in this process
    for name in passes if config == "mutated" else []:
        if name == POISON:
            _DAMAGED.add(tvm_ffi.structural_hash(func))
        before = mod["main"]
        mod = apply_pass(name, mod)
        if on_pass is not None:
            on_pass(name, before, mod["main"])
    for p in MANDATORY:
        mod = apply_pass(p, mod)
    return tirx.build(mod, target="llvm", pipeline=IDENTITY_PIPELINE)


def run_built(rt: Any, func: Any, inputs: dict[str, np.ndarray], repeat: int = 0) -> tuple[list[np.ndarray], float]:
    """Outputs (every buffer after one call) and the best time of `repeat` further calls (s)."""
    import tvm

    names = [p.name for p in func.params]
    args = [tvm.runtime.tensor(inputs[n].copy()) for n in names]
    rt["main"](*args)
    outs = [a.numpy() for a in args]
    best = float("inf")
    if repeat:
        scratch = [tvm.runtime.tensor(inputs[n].copy()) for n in names]
        for _ in range(repeat):
            t0 = time.perf_counter()
            rt["main"](*scratch)
            best = min(best, time.perf_counter() - t0)
    return outs, best


def execute(test: dict[str, Any], sources: list[str], note: Callable[[str], None] = lambda s: None,
            python_cov: Any = None, sancov: Any = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Run one test: (meta with observations and coverage items, output arrays "config/i")."""
    from dlcfuzz.tvm_tir.coverage import pass_features, shape_features
    from dlcfuzz.tvm_tir.seeds import parse

    items: set[str] = set()
    obs: list[dict[str, Any]] = []
    arrays: dict[str, np.ndarray] = {}
    note("parse:parse")
    try:
        func = parse(test["script"])
    except Exception as e:
        return {"invalid": f"{type(e).__name__}: {str(e)[-400:]}", "observations": [], "coverage": []}, {}
    if "ir" in sources:
        items |= shape_features(func)
    inputs = sample_inputs(func, int(test["seed"]))
    repeat = int(test.get("repeat", 3))
    if sancov is not None:
        sancov.reset()

    def on_pass(name: str, before: Any, after: Any) -> None:
        if "ir" in sources:
            items.update(pass_features(name, before, after))

    for config in test.get("configs", CONFIGS):
        t0 = time.perf_counter()
        stage = "compile"
        try:
            note(f"{config}:compile")
            if python_cov is not None and config == "mutated":
                with python_cov.tracing():
                    rt = build(func, config, test["passes"], on_pass)
            else:
                rt = build(func, config, test["passes"], on_pass)
            t1 = time.perf_counter()
            stage = "run"
            note(f"{config}:run")
            outs, best = run_built(rt, func, inputs, repeat)
            for i, a in enumerate(outs):
                arrays[f"{config}/{i}"] = a
            obs.append({"config": config, "status": "ok", "compile_s": t1 - t0, "run_s": best, "n": len(outs)})
        except MemoryError:
            raise
        except Exception as e:
            obs.append({"config": config, "status": "error", "stage": stage, "error": f"{type(e).__name__}: {e}"[:4000],
                        "traceback": traceback.format_exc(limit=8)[-3000:], "compile_s": time.perf_counter() - t0})
    if python_cov is not None:
        items |= python_cov.take()
    if sancov is not None:
        items |= sancov.take()
    return {"observations": obs, "coverage": sorted(items)}, arrays


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Pool factory: init = {"coverage": ["ir", "python", "sancov:LIB"]}. Imports TVM once per worker."""
    import os

    from dlcfuzz.exec.pool import progress
    from dlcfuzz.tvm_tir.coverage import PythonLines, SanCov

    sources = [s.split(":", 1)[0] for s in init.get("coverage", ["ir"])]
    sancov = next((SanCov(s.split(":", 1)[1]) for s in init.get("coverage", []) if s.startswith("sancov:")), None)
    import tvm

    register_identity_pipeline()
    python_cov = PythonLines(os.path.dirname(tvm.__file__)) if "python" in sources else None
    version = f"apache-tvm {tvm.__version__}"

    def handle(payload: bytes) -> bytes:
        meta, arrays = execute(decode_test(payload), sources, progress, python_cov, sancov)
        meta["version"] = version
        return pack(meta, arrays)

    return handle


def decode_reply(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return unpack(data)
