"""Drivers of `dlcfuzz verify`: the simplifier (expressions) and TIR passes (statements).

A run enumerates inputs, transforms and checks them (optionally in `jobs` spawned processes
that take every jobs-th input: the verdicts do not depend on jobs, since the solver is bounded by
a resource limit, not by time), confirms violations concretely, prints progress and a summary whose
last line is `proven: N, counterexamples: M, unknown: U`, and writes reproducers under --out.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from dlcfuzz.errors import UsageError
from dlcfuzz.tvm_tir.verify.enumerate import ExprSpace, StmtSpace, enumerate_exprs, enumerate_stmts
from dlcfuzz.tvm_tir.verify.validate import (
    COUNTEREXAMPLE,
    COUNTERS,
    ERROR,
    OVERFLOW,
    WRAP,
    ExprChecker,
    Finding,
    RunStats,
    StmtChecker,
    check_exprs,
    confirm_all,
    verify_funcs,
)

SIMPLIFY_METHODS = ("simplify", "rewrite_simplify", "canonical_simplify")


def simplifier(method: str) -> Callable[[Any], Any]:
    """The transformation under test: a fresh tvm.sym.Analyzer per expression (no state carried over)."""
    if method not in SIMPLIFY_METHODS:
        raise UsageError(f"unknown simplifier {method!r} (known: {', '.join(SIMPLIFY_METHODS)})")
    from tvm import sym

    def apply(e: Any) -> Any:
        return getattr(sym.Analyzer(), method)(e)
    return apply


@dataclass(frozen=True)
class PassInfo:
    name: str  # TVM's pass name, e.g. tirx.RemoveNoOp
    code: str  # Python expression building the pass (written into reproducers)
    kinds: tuple[str, ...]  # statement kinds it distinguishes (type pruning)


_ALL = ("Store", "Seq", "If", "For", "Evaluate")
PASSES = {p.name: p for p in (
    PassInfo("tirx.StmtSimplify", "tvm.tirx.transform.StmtSimplify()", _ALL),
    PassInfo("s_tir.StmtSimplify", "tvm.s_tir.transform.StmtSimplify()", _ALL),
    PassInfo("tirx.RemoveNoOp", "tvm.tirx.transform.RemoveNoOp()", _ALL),
    PassInfo("tirx.CommonSubexprElim", "tvm.tirx.transform.CommonSubexprElim()", ("Store", "Seq", "If")),
    PassInfo("tirx.UnrollLoop", "tvm.tirx.transform.UnrollLoop()", ("Store", "Seq", "For")),
    PassInfo("tirx.ConvertSSA", "tvm.tirx.transform.ConvertSSA()", ("Store", "Seq", "For")),
    PassInfo("tirx.NarrowDataType", "tvm.tirx.transform.NarrowDataType(32)", ("Store", "For")),
    PassInfo("s_tir.HoistIfThenElse", "tvm.s_tir.transform.HoistIfThenElse()", ("Store", "If", "For")),
    PassInfo("s_tir.LoopPartition", "tvm.s_tir.transform.LoopPartition()", ("Store", "If", "For")),
    PassInfo("s_tir.RewriteUnsafeSelect", "tvm.s_tir.transform.RewriteUnsafeSelect()", ("Store", "If")),
    PassInfo("s_tir.CanonicalizeLoop", "tvm.s_tir.transform.CanonicalizeLoop()", ("Store", "For")),
    PassInfo("s_tir.RenormalizeSplitPattern", "tvm.s_tir.transform.RenormalizeSplitPattern()", ("Store", "Seq")),
)}


def resolve_pass(name: str) -> PassInfo:
    if name in PASSES:
        return PASSES[name]
    matches = [p for p in PASSES.values() if p.name.split(".", 1)[1] == name]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UsageError(f"ambiguous pass {name!r}: {', '.join(p.name for p in matches)}")
    raise UsageError(f"unknown pass {name!r} (available: {', '.join(PASSES)})")


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------

def _worker(space: ExprSpace, method: str, rlimit: int, timeout_ms: int, seed: int, wrap: bool, job: int, jobs: int,
            q: Any) -> None:
    checker = ExprChecker(rlimit=rlimit, timeout_ms=timeout_ms, seed=seed, wrap=wrap)

    def progress(st: RunStats) -> None:
        q.put(("progress", job, {k: getattr(st, k) for k in COUNTERS}))

    stats, pending = check_exprs(enumerate_exprs(space), simplifier(method), checker, label=method,
                                 progress=progress, progress_every=1000, select=lambda i: i % jobs == job)
    # TVM objects do not pickle: send indices, the parent rebuilds the inputs.
    stats.error_examples = {k: (i, None, msg) for k, (i, _e, msg) in stats.error_examples.items()}
    q.put(("done", job, stats, [(i, res) for i, _b, _a, res in pending]))


def _peak_mb() -> tuple[float, float]:
    """Peak resident set sizes (MB) of this process and of the largest child process."""
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def _progress_line(out: TextIO, label: str, counts: dict[str, int], total: int, t0: float) -> None:
    done = counts["enumerated"]
    el = time.perf_counter() - t0
    eta = el / done * (total - done) if done else 0.0
    print(f"[{label}] {done}/{total} ({100 * done / max(total, 1):.0f}%) unchanged {counts['unchanged']} "
          f"proven {counts['proven']} wrap-only {counts['wrap_only']} violations {counts['candidates']} "
          f"unknown {counts['unknown'] + counts['unsupported']} errors {counts['errors']}  {el:.0f}s, eta {eta:.0f}s",
          file=out, flush=True)


def _printer(out: TextIO, label: str, total: int, t0: float) -> Callable[[RunStats], None]:
    def progress(st: RunStats) -> None:
        _progress_line(out, label, {k: getattr(st, k) for k in COUNTERS}, total, t0)
    return progress


def run_simplify(space: ExprSpace, methods: Sequence[str], *, jobs: int = 1, rlimit: int = 50_000,
                 timeout_ms: int = 5000, seed: int = 0, budget: dict[str, int] | None = None, wrap_solver: bool = False,
                 out: TextIO | None = None) -> RunStats:
    """Verify each simplifier method on every expression of the space."""
    out = out or sys.stdout
    for m in methods:
        simplifier(m)
    total = RunStats()
    n_inputs = sum(1 for _ in enumerate_exprs(space))
    for method in methods:
        t0 = time.perf_counter()
        print(f"[{method}] {n_inputs} expressions (depth {space.depth}, {space.dtype}, kinds {','.join(space.kinds)}; "
              f"root {','.join(space.root_kinds)}; {space.n_vars} variables), {jobs} process(es)", file=out, flush=True)
        if jobs <= 1:
            checker = ExprChecker(rlimit=rlimit, timeout_ms=timeout_ms, seed=seed, wrap=wrap_solver)
            stats, pending = check_exprs(enumerate_exprs(space), simplifier(method), checker, label=method,
                                         progress_every=2000, progress=_printer(out, method, n_inputs, t0))
        else:
            stats, pending = _parallel(space, method, rlimit, timeout_ms, seed, wrap_solver, jobs, n_inputs, t0, out)
        print(f"[{method}] checked in {time.perf_counter() - t0:.0f}s; confirming {len(pending)} violation(s) "
              f"concretely (within the budget)", file=out, flush=True)
        stats.findings = confirm_all(pending, f"tvm.sym.Analyzer().{method}(before)", method, budget)
        stats.findings += confirm_errors(stats, f"tvm.sym.Analyzer().{method}(before)", method, seed)
        stats.elapsed_s = time.perf_counter() - t0
        total.add(stats)
        total.elapsed_s += stats.elapsed_s
    return total


def _parallel(space: ExprSpace, method: str, rlimit: int, timeout_ms: int, seed: int, wrap: bool, jobs: int,
              n_inputs: int, t0: float, out: TextIO) -> tuple[RunStats, list]:
    ctx = mp.get_context("spawn")  # TVM and Z3 hold threads: never fork them
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(space, method, rlimit, timeout_ms, seed, wrap, j, jobs, q), daemon=True)
             for j in range(jobs)]
    for p in procs:
        p.start()
    counts = {j: dict.fromkeys(COUNTERS, 0) for j in range(jobs)}
    results: dict[int, tuple[RunStats, list]] = {}
    last = time.perf_counter()
    while len(results) < jobs:
        try:
            msg = q.get(timeout=5.0)
        except queue.Empty:
            if any(not p.is_alive() for j, p in enumerate(procs) if j not in results) and q.empty():
                time.sleep(1.0)
                if q.empty():
                    raise RuntimeError("a verification worker died") from None
            continue
        if msg[0] == "progress":
            counts[msg[1]] = msg[2]
        else:
            results[msg[1]] = (msg[2], msg[3])
            counts[msg[1]] = {k: getattr(msg[2], k) for k in COUNTERS}
        if time.perf_counter() - last >= 10.0:
            last = time.perf_counter()
            _progress_line(out, method, {k: sum(c[k] for c in counts.values()) for k in COUNTERS}, n_inputs, t0)
    for p in procs:
        p.join()
    stats = RunStats()
    wanted: dict[int, Any] = {}
    for j in range(jobs):
        st, pend = results[j]
        stats.add(st)
        wanted.update(dict(pend))
    # Rebuild the violating inputs here (the enumeration is deterministic) for the reproducers.
    pending = []
    transform = simplifier(method)
    errors = {i: k for k, (i, _e, _m) in stats.error_examples.items()}
    if wanted or errors:
        for i, e in enumerate(enumerate_exprs(space)):
            if i in wanted:
                pending.append((i, e, transform(e), wanted[i]))
            if i in errors:
                k = errors[i]
                stats.error_examples[k] = (i, e, stats.error_examples[k][2])
    return stats, pending


def confirm_errors(stats: RunStats, after_code: str, label: str, seed: int, limit: int = 10) -> list[Finding]:
    """One reproducer per distinct error message whose input is defined somewhere (a crash of the
    transformation on a valid program, not a rejected undefined one)."""
    import subprocess

    from dlcfuzz.tvm_tir.verify.concrete import Confirmation, error_reproducer, free_vars

    checker = ExprChecker(seed=seed)
    out = []
    for _key, (_i, e, msg) in list(stats.error_examples.items())[:limit]:
        if e is None:
            continue
        ev = checker._screen_for(free_vars(e))
        b = ev.eval(e) if ev is not None else None
        if b is None or not (b.no_overflow & b.no_trap).any():
            continue
        i = int((b.no_overflow & b.no_trap).argmax())
        values = {k: int(v[i]) for k, v in ev.env.items()}
        script = error_reproducer(e, after_code, values, int(b.value[i]), f"{label}: raises {msg[:120]}")
        try:
            p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
            ok = p.returncode == 1
            detail = (p.stdout.strip().splitlines() or [""])[-1]
        except subprocess.TimeoutExpired:
            ok, detail = False, "timed out"
        out.append(Finding(ERROR, str(e), msg, values, "transformation", script, Confirmation(ok, detail), label))
    return out


# ---------------------------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------------------------

def run_passes(names: Sequence[str], space: StmtSpace, *, rlimit: int = 2_000_000, budget: int = 10,
               out: TextIO | None = None) -> RunStats:
    import tvm

    from dlcfuzz.tvm_tir.verify.enumerate import BUF_SIZE

    out = out or sys.stdout
    infos = [resolve_pass(n) for n in names]
    total = RunStats()
    for info in infos:
        kinds = tuple(k for k in space.kinds if k in info.kinds)
        sp = StmtSpace(kinds=kinds, depth=space.depth, limit=space.limit, seed=space.seed)
        funcs = list(enumerate_stmts(sp))
        print(f"[{info.name}] {len(funcs)} functions (statement kinds {','.join(kinds)}, depth {sp.depth})",
              file=out, flush=True)
        t0 = time.perf_counter()
        pass_obj = eval(info.code, {"tvm": tvm})  # noqa: S307 - a fixed table entry, not user input

        def apply(f: Any, pass_obj: Any = pass_obj) -> Any:
            return pass_obj(tvm.IRModule({"main": f}))["main"]

        stats = verify_funcs(funcs, info.name, info.code, apply, StmtChecker(rlimit=rlimit), {"A": ("int32", BUF_SIZE)},
                             disabled=[info.name], max_confirm=budget, progress_every=500,
                             progress=_printer(out, info.name, len(funcs), t0))
        total.add(stats)
        total.elapsed_s += stats.elapsed_s
    return total


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

def _slug(f: Finding) -> str:
    if f.status == WRAP:
        return "wrap"
    if f.status == ERROR:
        return "crash"
    return "cex" if f.confirmed else "unconfirmed"


def report(stats: RunStats, out_dir: Path | None, out: TextIO | None = None, started: float | None = None) -> None:
    """Summary lines, reproducers under out_dir; the last line is the proven/counterexamples/unknown tally."""
    out = out or sys.stdout
    if out_dir is not None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create {out_dir}: {e.strerror}") from None
    n = 0
    for f in stats.findings:
        if not f.script:
            continue
        n += 1
        path = None
        if out_dir is not None:
            path = out_dir / f"{_slug(f)}_{n:03d}.py"
            path.write_text(f.script)
        if f.status == COUNTEREXAMPLE and f.confirmed:
            print(f"COUNTEREXAMPLE ({f.label}, {f.kind or 'state'}): {f.before}  ->  {f.after}  at {f.model}", file=out)
            print(f"  confirmed: {f.confirmation.detail if f.confirmation else ''}", file=out)
            if path is not None:
                print(f"  reproducer: {path}", file=out)
        if f.status == ERROR and f.confirmed:
            print(f"CRASH ({f.label}) on a defined input: {f.before}  (defined at {f.model}): {f.after}", file=out)
            if path is not None:
                print(f"  reproducer: {path}", file=out)
    wraps = [f for f in stats.findings if f.status == WRAP]
    unconf = stats.unconfirmed
    over = sum(1 for f in unconf if f.kind == OVERFLOW)
    if out_dir is not None:
        summary = {k: getattr(stats, k) for k in COUNTERS}
        summary["findings"] = [{k: v for k, v in asdict(f).items() if k != "script"} for f in stats.findings]
        summary["error_samples"] = stats.error_samples
        summary["error_counts"] = stats.error_counts
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    self_mb, child_mb = _peak_mb()
    print(f"enumerated: {stats.enumerated}, unchanged: {stats.unchanged}, solver queries: {stats.queries} "
          f"({stats.solver_s:.0f}s in the solver)", file=out)
    print(f"wrap-around-only differences: {len(wraps)} ({sum(f.confirmed for f in wraps)} of "
          f"{sum(bool(f.script) for f in wraps)} run confirmed)", file=out)
    print(f"unconfirmed refinement violations: {len(unconf)} ({over} only introduce an overflow; the compiled "
          f"programs agree or were not run)", file=out)
    crashes = [f for f in stats.findings if f.status == ERROR and f.confirmed]
    print(f"transformation errors: {stats.errors} ({len(stats.error_counts)} distinct messages; {len(crashes)} "
          f"reproduced on inputs that are defined somewhere)", file=out)
    for key, n in sorted(stats.error_counts.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  x{n}: {key[:150]}", file=out)
    patterns = {f.pattern for f in stats.findings if f.status == COUNTEREXAMPLE and f.pattern}
    confirmed_patterns = {f.pattern for f in stats.counterexamples}
    print(f"refinement violations: {stats.candidates} in {len(patterns)} rewrite patterns "
          f"({len(confirmed_patterns)} patterns confirmed concretely)", file=out)
    print(f"unknown (solver limit): {stats.unknown}, unsupported: {stats.unsupported}", file=out)
    elapsed = time.perf_counter() - started if started is not None else stats.elapsed_s
    print(f"elapsed: {elapsed:.1f}s, peak RSS: {self_mb:.0f} MB (largest child {child_mb:.0f} MB)", file=out)
    proven, cex, unknown = stats.totals()
    print(f"proven: {proven}, counterexamples: {cex}, unknown: {unknown}", file=out, flush=True)
