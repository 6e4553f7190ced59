"""`dlcfuzz verify simplify | pass`: argument parsing and glue (heavy imports happen in the commands)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlcfuzz.errors import UsageError


def _require_z3() -> None:
    try:
        import z3  # noqa: F401
    except ImportError:
        raise UsageError("verify needs z3-solver (pip install 'dlcfuzz[verify]')") from None
    try:
        import tvm  # noqa: F401
    except ImportError:
        raise UsageError("verify needs TVM (pip install 'dlcfuzz[tvm]')") from None


def cmd_verify_simplify(a: argparse.Namespace) -> int:
    _require_z3()
    from dlcfuzz.tvm_tir.verify.enumerate import INDEX_KINDS, ExprSpace, parse_kinds
    from dlcfuzz.tvm_tir.verify.run import SIMPLIFY_METHODS, report, run_simplify
    from dlcfuzz.tvm_tir.verify.semantics import int_type
    from dlcfuzz.tvm_tir.verify.validate import DEFAULT_CONFIRM, MISMATCH, OVERFLOW, WRAP

    started = time.perf_counter()
    try:
        int_type(a.dtype)
    except Exception:
        raise UsageError(f"--dtype {a.dtype}: not an integer dtype (int8, int16, int32, int64)") from None
    if a.depth < 1 or a.depth > 3:
        raise UsageError("--depth must be 1, 2 or 3")
    if a.vars < 1 or a.vars > 4:
        raise UsageError("--vars must be between 1 and 4")
    if a.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    methods = [m for m in a.methods.split(",") if m]
    for m in methods:
        if m not in SIMPLIFY_METHODS:
            raise UsageError(f"unknown simplifier method {m!r} (known: {', '.join(SIMPLIFY_METHODS)})")
    kinds = parse_kinds(a.kinds) if a.kinds else INDEX_KINDS
    root = parse_kinds(a.root_kinds) if a.root_kinds else kinds + ("LT", "EQ")
    space = ExprSpace(dtype=a.dtype, depth=a.depth, kinds=kinds, root_kinds=root, n_vars=a.vars)
    budget = {MISMATCH: a.max_confirm, OVERFLOW: min(a.max_confirm, DEFAULT_CONFIRM[OVERFLOW]),
              WRAP: min(a.max_confirm, DEFAULT_CONFIRM[WRAP])}
    stats = run_simplify(space, methods, jobs=a.jobs, rlimit=a.rlimit, seed=a.seed, budget=budget,
                         timeout_ms=a.timeout_ms, wrap_solver=a.wrap_solver)
    report(stats, Path(a.out) if a.out else None, started=started)
    return 1 if stats.counterexamples else 0


def cmd_verify_pass(a: argparse.Namespace) -> int:
    _require_z3()
    from dlcfuzz.tvm_tir.verify.run import PASSES, report, resolve_pass, run_passes

    if a.list or not a.names:
        for p in PASSES.values():
            print(f"{p.name:28s} kinds: {','.join(p.kinds)}")
        if not a.list:
            raise UsageError("name at least one pass (see the list above)")
        return 0
    _require_z3()
    from dlcfuzz.tvm_tir.verify.enumerate import STMT_KINDS, StmtSpace

    started = time.perf_counter()
    for n in a.names:
        resolve_pass(n)
    if a.depth < 0 or a.depth > 2:
        raise UsageError("--depth must be 0, 1 or 2")
    if a.limit < 1:
        raise UsageError("--limit must be at least 1")
    stats = run_passes(a.names, StmtSpace(kinds=STMT_KINDS, depth=a.depth, limit=a.limit, seed=a.seed),
                       rlimit=a.rlimit, budget=a.max_confirm)
    report(stats, Path(a.out) if a.out else None, started=started)
    return 1 if stats.counterexamples else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser("verify", help="prove TVM's simplifier / TIR passes correct by symbolic translation validation")
    vs = v.add_subparsers(dest="verify_cmd", required=True)
    s = vs.add_parser("simplify", help="tvm.sym.Analyzer simplify on every expression up to a depth")
    s.add_argument("--depth", type=int, default=2)
    s.add_argument("--dtype", default="int32")
    s.add_argument("--vars", type=int, default=2, help="distinct variables per expression")
    s.add_argument("--kinds", help="comma-separated node kinds inside the tree (default: index arithmetic)")
    s.add_argument("--root-kinds", dest="root_kinds", help="node kinds at the root (default: --kinds plus LT,EQ)")
    s.add_argument("--methods", default="simplify", help="simplify,rewrite_simplify,canonical_simplify")
    s.add_argument("--jobs", type=int, default=2)
    s.add_argument("--rlimit", type=int, default=50_000, help="Z3 resource limit per query (deterministic)")
    s.add_argument("--timeout-ms", dest="timeout_ms", type=int, default=5000,
                   help="wall-clock cap per query, a safety net behind --rlimit")
    s.add_argument("--wrap-solver", dest="wrap_solver", action="store_true",
                   help="also prove the absence of wrap-around-only differences (a second query per input)")
    s.add_argument("--max-confirm", dest="max_confirm", type=int, default=40,
                   help="violations to confirm concretely (a reproducer run each, one per rewrite pattern)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", help="folder for reproducer scripts and summary.json")
    s.set_defaults(fn=cmd_verify_simplify)
    s = vs.add_parser("pass", help="TIR passes on every statement up to a depth")
    s.add_argument("names", nargs="*", help="pass names, e.g. tirx.RemoveNoOp (see --list)")
    s.add_argument("--list", action="store_true", help="list the passes that can be verified")
    s.add_argument("--depth", type=int, default=2)
    s.add_argument("--limit", type=int, default=1000, help="depth-2 statements sampled (seeded) per pass")
    s.add_argument("--rlimit", type=int, default=2_000_000)
    s.add_argument("--max-confirm", dest="max_confirm", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", help="folder for reproducer scripts and summary.json")
    s.set_defaults(fn=cmd_verify_pass)
