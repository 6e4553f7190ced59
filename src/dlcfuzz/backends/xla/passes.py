"""The HLO pass table of the installed XLA, read from the compiler itself, and pass-set sampling.

`python -m dlcfuzz.backends.xla.passes` regenerates `hlo_passes_data.py`: it compiles probe programs
(random dlcfuzz graphs over every operator, lowered to JAX) in a child process whose XLA logs its pass
pipeline (`TF_CPP_VMODULE=hlo_pass_pipeline=2`: "Running HLO pass pipeline on module M: P" and
"HLO pass NAME" lines), collects every pass that ran and the pipelines it ran in, then compiles the
probes once per pass with `xla_disable_hlo_passes=NAME`, each in its own child process: a pass whose
disabling makes the compile fail or the process die is `required` (XLA's CPU backend cannot lower
without it, e.g. layout assignment), never sampled: such a failure is a documented consequence of a
debug option, not a miscompilation.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).with_name("hlo_passes_data.py")
_PIPELINE = re.compile(r"Running HLO pass pipeline on module \S+: (.+)$")
_PASS = re.compile(r"\]\s+HLO pass (\S+)$")


def pass_table() -> dict:
    """{"jaxlib": version, "produced_by": how, "passes": {name: {"pipelines": [...], "runs": n,
    "required": bool, "why": str}}} of the installed XLA (the generated data module)."""
    from dlcfuzz.backends.xla import hlo_passes_data

    return hlo_passes_data.TABLE


# Passes the CPU backend needs for correct results, not just to compile (measured by hand, so not in
# the generated table): disabling them is a documented misuse of a debug option, never a finding.
REQUIRED_FOR_CORRECTNESS = {
    "layout-assignment": "XLA:CPU's emitter relies on assigned physical layouts: without the pass (alone, or "
                         "with xla_disable_all_hlo_passes) jnp.transpose of a [4,5,3] array returns wrong values "
                         "in every dtype (jax 0.10.2)",
    "copy-insertion": "outputs that alias each other or a parameter need the copies this pass inserts: without "
                      "it the PjRt CPU client aborts (cpu_client.cc 'Check failed: output_indices_[...] == -1 "
                      "Unexpected duplicate') or buffer assignment fails (measured, jax 0.10.2)",
    "batched_gather_scatter_normalizer": "XLA:CPU's emitter takes gathers without batching dimensions only: "
                                         "without the pass, jnp.take_along_axis (TensorScatter's lowering) "
                                         "kills the process with SIGSEGV (measured by bisecting the pass set, "
                                         "jax 0.10.2); the generated table's probes had no batched gather",
    "operand_upcaster": "dot_general with preferred_element_type wider than its operands (JAX programs' float16 x "
                        "float16 = float32, int16 x int16 = int64) needs it: without it and result_caster the CPU "
                        "thunk raises 'Unsupported element type for DotThunk::Execute: F16 x F16 = F32' or the "
                        "compile fails a RET_CHECK (measured, jax 0.10.2; openxla/xla#14607); the generated "
                        "table's probes (ONNX graphs) had no mixed-precision dot",
    "result_caster": "the other half of dot_general's preferred_element_type (see operand_upcaster)",
    "comparison-expander": "the pass is how XLA:CPU implements a TOTALORDER float compare (rewritten into an integer "
                           "compare of the bits); without it the emitter compares as plain floats, where NaN is "
                           "unordered, so the comparator jax gives every float sort is no strict weak order: "
                           "lax.sort of a float32 [1,8] holding NaNs returns [-2, 1, nan, 3, nan, -inf, 0.5, inf], "
                           "unsorted (measured with xla_disable_hlo_passes=comparison-expander alone, jax 0.10.2; "
                           "correct without NaN); the generated table's probes sorted no NaN",
    "bitcast_dtypes_expander": "how XLA:CPU implements bitcast_convert_type to a type of another width (a last axis of "
                               "the width ratio): without it the compile of lax.bitcast_convert_type(float32[3,4], "
                               "uint8) or of int16 to int8 kills the process (SIGSEGV alone, SIGABRT with "
                               "xla-nopasses' set; measured, jax 0.10.2); the generated table's probes bitcast at one "
                               "width only",
    **{f"float-normalization-{short}": f"XLA:CPU computes no arithmetic in {dtype}: the pass converts it to a wider "
                                      f"type; with it alone disabled jnp.maximum of two {dtype} arrays fails to compile "
                                      "(\"failed to legalize operation 'arith.maximumf'\"), and with the other optional "
                                      "passes disabled too the LLVM verifier rejects the module ('@llvm.maximum.i8'; "
                                      "measured, jax 0.10.2); the generated table's probes used no such type"
       for short, dtype in (("f8e4m3fn", "float8_e4m3fn"), ("f8e5m2", "float8_e5m2"), ("f8e4m3fnuz", "float8_e4m3fnuz"),
                            ("f8e5m2fnuz", "float8_e5m2fnuz"), ("f8e4m3b11fnuz", "float8_e4m3b11fnuz"),
                            ("f8e3m4", "float8_e3m4"), ("f8e4m3", "float8_e4m3"), ("f8e8m0fnu", "float8_e8m0fnu"),
                            ("f4e2m1fn", "float4_e2m1fn"))},  # int4 and uint4 compile and agree without theirs
    "conditional-to-select": "XLA:CPU cannot run a conditional inside a reduction's computation: the pass turns it "
                             "into a select; with it alone disabled the compile of lax.reduce whose computation is a "
                             "lax.cond (JAX programs' reduce_by_cond) aborts the process (computation_partitioner.cc "
                             "'Check failed: operand_maps.size() == 1', SIGABRT; measured, jax 0.10.2); the generated "
                             "table's probes had no such computation",
    "rng-expander": "how XLA:CPU implements lax.rng_uniform: with it alone disabled the compile aborts the process "
                    "(SIGABRT; with xla-nopasses' set it raises 'Rng should be expanded for CPU'; measured, jax "
                    "0.10.2); the generated table's probes drew no random numbers",
}


def optional_passes() -> list[str]:
    """Passes that may be disabled one by one or in sets (not required to compile or to be correct)."""
    return sorted(n for n, p in pass_table()["passes"].items()
                  if not p["required"] and n not in REQUIRED_FOR_CORRECTNESS)


def sample_disabled(rng: np.random.Generator, k_max: int = 6) -> list[str]:
    """A random non-empty set of 1..k_max optional passes to disable (sorted, for stable names)."""
    names = optional_passes()
    k = int(rng.integers(1, min(k_max, len(names)) + 1))
    return sorted(str(n) for n in rng.choice(names, size=k, replace=False))


# ---- which passes changed a module ----------------------------------------------------------------
# XLA logs "Pass caused changes NAME" after each pass run that changed the module (hlo_pass_pipeline.cc, VLOG 3).
# XLA reads these variables once, when its logging starts: a process must have them before jax's first compile.
PASS_LOG_ENV = {"TF_CPP_MIN_LOG_LEVEL": "0", "TF_CPP_VMODULE": "hlo_pass_pipeline=3"}
_CHANGED = re.compile(r"\]\s+Pass caused changes (\S+)$")
_XLA_LOG = re.compile(r"^[IWEF]\d{4} ")  # a glog/absl line: "I1130 06:49:22.286619   26294 file.cc:213] ..."


@contextmanager
def changed_passes() -> Iterator[set[str]]:
    """Within: XLA's log (file descriptor 2) goes to a temporary file; on exit the yielded set holds the HLO
    passes whose run changed a module in the compiles made within, and whatever else was written there goes
    back to stderr. Empty unless this process started with `PASS_LOG_ENV`."""
    changed: set[str] = set()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            yield changed
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            other = []
            for line in log.read().decode(errors="replace").splitlines():
                m = _CHANGED.search(line)
                if m:
                    changed.add(m.group(1))
                elif not _XLA_LOG.match(line):
                    other.append(line)
            if other:
                print("\n".join(other), file=sys.stderr)


# In a campaign's workers, whose stderr must keep a crashing compile's messages and whose environment is the
# campaign's: XLA dumps the module after each pass that changed it when a compile's own options ask for it
# (`xla_dump_hlo_pass_re`), one file per such pass, named "module_M.NAME.K.PIPELINE.after_PASS.before_NEXT.txt";
# each pipeline's start is dumped too ("after_pipeline-start"), and a nested pipeline is dumped as a pass of its
# parent, which the log counts only where it runs as a pass of the table (e.g. "simplification", not
# "simplification_after_layout_assignment"). One compile of an [8,8] sort/exp/tanh/dot/cumsum program, 12 compiles of each
# kind alternating in one process (jax 0.10.2, load ~15): 0.152 CPU s with the text dumps (49 files), 0.152 without;
# binary protos instead of text cost 0.162 (the dumps are not what makes a loaded compile slow).
_DUMPED = re.compile(r"\.\d{4}\.([^.]+)\.after_([^.]+)\.before_")


@contextmanager
def dumped_changes(options: dict[str, Any]) -> Iterator[tuple[dict[str, Any], set[str]]]:
    """Within: `options` plus the dump options, for the compiles to record; on exit the yielded set holds the HLO
    passes that changed a module in those compiles (what `changed_passes` reads from the log, without the process
    environment and without touching stderr). The dumps go to a temporary folder, removed on exit."""
    changed: set[str] = set()
    folder = tempfile.mkdtemp(prefix="dlcfuzz-hlo-")
    try:
        yield {**options, "xla_dump_to": folder, "xla_dump_hlo_pass_re": ".*"}, changed
    finally:
        found = [m.groups() for name in os.listdir(folder) if (m := _DUMPED.search(name))]
        pipelines, table = {pipeline for pipeline, _ in found}, pass_table()["passes"]
        changed.update(p for _, p in found if p != "pipeline-start" and (p not in pipelines or p in table))
        shutil.rmtree(folder, ignore_errors=True)


# ---- regeneration (run by hand after a jaxlib upgrade) ----------------------------------------------

_PROBE_SEEDS = range(40)
_PER_PASS_PROBES = 12  # probes compiled per disabled pass


def _probe_programs() -> list:
    """(function, args) pairs covering every operator: random graphs of the default generator."""
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.gen.random import generate
    from dlcfuzz.lower.jax import to_jax_program

    out = []
    for seed in _PROBE_SEEDS:
        rng = np.random.default_rng(seed)
        g = generate(rng, 12)
        prog = to_jax_program(g)
        x = sample_inputs(g, rng)
        out.append((prog.function(), [x[n] for n in prog.input_names]))
    return out


def _child(disabled: str) -> None:
    """In a child process: compile every probe (with `disabled` passes off, if any) and run it."""
    import jax

    from dlcfuzz.lower.jax import enable_x64

    enable_x64()
    opts = {"xla_disable_hlo_passes": disabled} if disabled else {}
    for fn, args in _probe_programs():
        jax.jit(fn).lower(*args).compile(compiler_options=opts)(*args)


def _child_each(names: list[str]) -> None:
    """In a child process: for each pass, compile the first probes with it alone disabled; print
    "ok NAME" or "fail NAME" (flushed: a pass that kills the process is the one after the last line)."""
    import jax

    from dlcfuzz.lower.jax import enable_x64

    enable_x64()
    probes = _probe_programs()[:_PER_PASS_PROBES]
    for name in names:
        try:
            for fn, args in probes:
                jax.jit(fn).lower(*args).compile(compiler_options={"xla_disable_hlo_passes": name})(*args)
            print(f"ok {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - any failure makes the pass required
            print(f"fail {name} {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}", flush=True)


def _pipelines_from_log(log: str) -> dict[str, dict]:
    passes: dict[str, dict] = {}
    pipeline = "?"
    for line in log.splitlines():
        m = _PIPELINE.search(line)
        if m:
            pipeline = m.group(1).strip()
            continue
        m = _PASS.search(line)
        if m:
            p = passes.setdefault(m.group(1), {"pipelines": [], "runs": 0})
            p["runs"] += 1
            if pipeline not in p["pipelines"]:
                p["pipelines"].append(pipeline)
    return passes


def regenerate() -> dict:
    import jaxlib

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0", "TF_CPP_VMODULE": "hlo_pass_pipeline=2",
           "JAX_PLATFORMS": "cpu"}
    me = [sys.executable, "-m", "dlcfuzz.backends.xla.passes", "--child"]
    log = subprocess.run(me + [""], env=env, capture_output=True, text=True, timeout=1800)
    if log.returncode:
        raise RuntimeError(f"probe compile failed:\n{log.stderr[-3000:]}")
    passes = _pipelines_from_log(log.stderr)
    quiet = {**os.environ, "JAX_PLATFORMS": "cpu"}
    todo = sorted(passes)
    while todo:  # one child for many passes; one that dies names the pass it died on
        r = subprocess.run(me[:-1] + ["--child-each", ",".join(todo)], env=quiet, capture_output=True, text=True,
                           timeout=3600)
        done = [ln.split(" ", 2) for ln in r.stdout.splitlines() if ln.startswith(("ok ", "fail "))]
        for verdict, name, *why in done:
            passes[name]["required"] = verdict == "fail"
            passes[name]["why"] = why[0] if why else ""
        todo = todo[len(done):]
        if todo and r.returncode:
            died = todo.pop(0)
            passes[died]["required"] = True
            passes[died]["why"] = f"the compiler process died (exit {r.returncode})"
        elif todo:
            raise RuntimeError(f"probe child stopped early:\n{r.stderr[-3000:]}")
    return {
        "jaxlib": jaxlib.__version__,
        "produced_by": ("python -m dlcfuzz.backends.xla.passes: the passes XLA's CPU pipeline logged "
                        "(TF_CPP_VMODULE=hlo_pass_pipeline=2) while compiling 40 random 12-operator dlcfuzz "
                        "graphs; `required`: disabling the pass alone (xla_disable_hlo_passes) made the compile "
                        "of one of the first 12 of those graphs fail or the process die"),
        "passes": passes,
    }


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--child-each":
        _child_each(sys.argv[2].split(","))
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        _child(sys.argv[2] if len(sys.argv) > 2 else "")
        return
    table = regenerate()
    DATA.write_text(
        '"""Generated by `python -m dlcfuzz.backends.xla.passes` (see passes.py): the HLO passes of the\n'
        'installed XLA CPU pipeline, and which of them cannot be disabled. Do not edit by hand."""\n\n'
        f"TABLE = {json.dumps(table, indent=1, sort_keys=True)}\n".replace(": true", ": True")
        .replace(": false", ": False")
    )
    print(f"{len(table['passes'])} passes, {sum(p['required'] for p in table['passes'].values())} required "
          f"-> {DATA}")


if __name__ == "__main__":
    main()


# ---- compile options: facts the backend and the program dialect share ----------------------------------
FAST_MATH = ("xla_cpu_enable_fast_math", "xla_cpu_fast_math_honor_nans", "xla_cpu_fast_math_honor_infs",
             "xla_cpu_fast_math_honor_division", "xla_cpu_fast_math_honor_functions")
# compile-time status codes of XLA refusing a module its skipped passes should have prepared
PIPELINE_PRECONDITION = re.compile(r"FAILED_PRECONDITION|INTERNAL|INVALID_ARGUMENT")


def disabled_passes(options: dict[str, Any]) -> list[str]:
    """The pass names a configuration disables (xla_disable_hlo_passes is a comma-separated list)."""
    text = str((options.get("compiler_options") or {}).get("xla_disable_hlo_passes", ""))
    return [p for p in text.split(",") if p]


def pass_enabled(options: dict[str, Any], name: str) -> bool:
    """Whether HLO pass `name` runs when compiling with `options`."""
    if options.get("mode", "jit") == "eager":
        return False
    co = options.get("compiler_options") or {}
    return not co.get("xla_disable_all_hlo_passes") and name not in disabled_passes(options)
