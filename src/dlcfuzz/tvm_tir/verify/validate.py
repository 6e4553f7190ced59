"""Translation validation: prove a transformation's output refines its input, or find a counterexample.

Per input: skip it when the output is structurally unchanged; screen both on a few hundred
boundary/random assignments with NumPy (a difference there is a counterexample without the
solver); otherwise ask Z3, with a per-query timeout, whether some assignment makes the input
defined and the output undefined or different (refinement), then whether some trap-free assignment
makes the bits differ (wrap-around only, lower severity). Results are cached by structure up to
variable renaming. Counterexamples are reported only after their reproducer, run in a fresh
interpreter, shows the two compiled programs disagree (see concrete.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import z3

from dlcfuzz.errors import Unsupported
from dlcfuzz.tvm_tir.verify.concrete import (
    SEMANTICS_NOTE,
    Confirmation,
    expr_reproducer,
    free_vars,
    run_reproducer,
    stmt_reproducer,
)
from dlcfuzz.tvm_tir.verify.semantics import (
    IntTranslator,
    NumpyEvaluator,
    Term,
    Z3Translator,
    _and,
    abstract_common,
    initial_state,
    int_type,
    is_float,
    nonlinear_subterms,
    run_stmt,
    z3_var,
)

# Statuses of one check.
UNCHANGED, PROVEN, WRAP, COUNTEREXAMPLE, UNKNOWN, UNSUPPORTED, ERROR = (
    "unchanged", "proven", "wrap-only", "counterexample", "unknown", "unsupported", "error")


# Kinds of refinement violation, worst first.
MISMATCH = "mismatch"  # the output has another value, or traps (zero divisor), where the input is defined
OVERFLOW = "overflow"  # the output overflows where the input does not (wrapped bits may still agree)


@dataclass
class Outcome:
    status: str
    model: dict[str, int] | None = None  # the counterexample's variable values
    source: str = ""  # "screen" or "solver"
    detail: str = ""
    kind: str = ""  # for counterexamples: MISMATCH or OVERFLOW


def _structural_equal(a: Any, b: Any) -> bool:
    import tvm_ffi

    return bool(tvm_ffi.structural_equal(a, b))


def _structural_key(before: Any, after: Any) -> int:
    import tvm_ffi

    return int(tvm_ffi.structural_hash([before, after], map_free_vars=True))


def screen_values(dtype: str) -> list[int]:
    """Boundary values of a dtype (the screen's grid): around 0, powers of two, the extremes."""
    t = int_type(dtype)
    if t.is_bool:
        return [0, 1]
    vals = {0, 1, -1, 2, -2, 3, 7, -7, 8, t.min, t.max, t.min + 1, t.max - 1, t.max // 2, t.min // 2, t.max // 2 + 1}
    if t.bits >= 16:
        vals |= {255, -256, 1 << (t.bits // 2 - 1), -(1 << (t.bits // 2 - 1)), (1 << (t.bits // 2)) + 1}
    return sorted(v for v in vals if t.min <= v <= t.max)


class ExprChecker:
    """Refinement checker for pairs of TIR expressions (any dtype the semantics models)."""

    def __init__(self, rlimit: int = 50_000, timeout_ms: int = 5000, seed: int = 0, samples: int = 384,
                 wrap: bool = True) -> None:
        """wrap: also ask the solver for wrap-around-only differences (otherwise only the screen
        looks for them: a second query on every proven input, for the lower severity class)."""
        self.rlimit = rlimit
        self.timeout_ms = timeout_ms  # a safety net only: rlimit decides
        self.seed = seed
        self.samples = samples
        self.wrap = wrap
        self.translator = Z3Translator()
        self.queries = 0
        self._last_model_agrees = True
        self._floats = False
        self._screens: dict[tuple, NumpyEvaluator] = {}
        self.cache: dict[int, Outcome] = {}
        self.solver_s = 0.0

    def solver(self) -> z3.Solver:
        # A fresh non-incremental solver per query: simplify, bit-blast, SAT. Several times faster
        # than the incremental core that push/pop selects. The resource limit (not a wall-clock
        # timeout) bounds it, so a run's verdicts do not depend on the machine's load.
        if self._floats:  # the bit-blast tactic has no floating point: Z3's QF_FP solver
            s = z3.Solver()
        else:
            s = z3.Then("simplify", "propagate-values", "solve-eqs", "bit-blast", "sat").solver()
        s.set("rlimit", self.rlimit)
        s.set("timeout", self.timeout_ms)
        return s

    def _screen_for(self, variables: Sequence[Any]) -> NumpyEvaluator | None:
        key = tuple((str(v.name), str(v.ty)) for v in variables)
        if key in self._screens:
            return self._screens[key]
        if any(is_float(dt) for _n, dt in key):
            self._screens[key] = None
            return None
        rng = np.random.default_rng(self.seed)
        grids = [screen_values(dt) for _n, dt in key]
        total = int(np.prod([len(g) for g in grids])) if grids else 1
        if total <= self.samples:
            idx = np.array(np.meshgrid(*[np.arange(len(g)) for g in grids], indexing="ij")).reshape(len(grids), -1)
        else:
            idx = np.stack([rng.integers(0, len(g), self.samples) for g in grids]) if grids else np.zeros((0, 1), int)
        n = idx.shape[1] if grids else 1
        env = {}
        for (name, dt), g, row in zip(key, grids, idx):
            big = int_type(dt).bits > 32
            vals = np.array(g, dtype=object if big else np.int64)[row]
            # A quarter random values: boundary grids miss interior relations.
            t = int_type(dt)
            rand = rng.integers(t.min, t.max, n, endpoint=True, dtype=np.int64)
            mask = rng.random(n) < 0.25
            vals = np.where(mask, rand.astype(object) if big else rand, vals)
            env[name] = vals
        ev = NumpyEvaluator(env, n)
        self._screens[key] = ev
        return ev

    def check(self, before: Any, after: Any) -> Outcome:
        if _structural_equal(before, after):
            return Outcome(UNCHANGED)
        key = _structural_key(before, after)
        hit = self.cache.get(key)
        if hit is not None and hit.status not in (COUNTEREXAMPLE, WRAP):
            return hit  # counterexamples are re-derived: their model is in this input's variable names
        out = self._check(before, after)
        self.cache[key] = out
        return out

    def _check(self, before: Any, after: Any) -> Outcome:
        variables = free_vars(before)
        names = {str(v.name) for v in variables}
        variables += [v for v in free_vars(after) if str(v.name) not in names]
        self._floats = is_float(str(before.ty)) or any(is_float(str(v.ty)) for v in variables)
        wrap_hit: Outcome | None = None
        try:
            ev = self._screen_for(variables)
        except Unsupported:
            ev = None
        if ev is not None:
            a, b = ev.eval(before), ev.eval(after)
            if a is not None and b is not None:
                equal = a.value == b.value
                in_defined = a.no_overflow & a.no_trap
                # Worst first: a different value or a trap, then an overflow the input did not have.
                for kind, bad in ((MISMATCH, in_defined & ~(b.no_trap & equal)),
                                  (OVERFLOW, in_defined & ~b.no_overflow)):
                    if bad.any():
                        i = int(np.argmax(bad))
                        return Outcome(COUNTEREXAMPLE, {k: int(v[i]) for k, v in ev.env.items()}, "screen", kind=kind)
                wrap_bad = a.no_trap & ~(b.no_trap & equal)
                if wrap_bad.any():
                    i = int(np.argmax(wrap_bad))
                    wrap_hit = Outcome(WRAP, {k: int(v[i]) for k, v in ev.env.items()}, "screen")
        res = "unknown"
        # Fast path: mathematical integers (no multiplier/divider circuits to bit-blast).
        ires, imodel = self._int_query(before, after, variables)
        if ires == "unsat":
            return self._proven(before, after, variables, wrap_hit)
        if ires == "sat" and imodel is not None:
            kind = self._classify(before, after, imodel)
            if kind is not None:
                if kind == OVERFLOW:
                    found = self._find_mismatch(before, after, variables)
                    if found is not None:
                        return found
                return Outcome(COUNTEREXAMPLE, imodel, "solver", kind=kind)
        if ires == "unknown" and nonlinear_subterms(before) + nonlinear_subterms(after):
            # The bit-vector query would bit-blast the same multipliers/dividers: give up here.
            return Outcome(UNKNOWN, detail="solver: resource limit")
        abstract = abstract_common(before, after)
        if abstract:
            # Fast first try: shared multipliers/dividers as opaque values (unsat here is a proof).
            self.translator.abstract = abstract
            try:
                a_in, a_out = self.translator.expr(before), self.translator.expr(after)
            except Unsupported as e:
                return Outcome(UNSUPPORTED, detail=str(e))
            finally:
                self.translator.abstract = None
            res, _m = self._query(a_in.defined, a_out.defined, a_in, a_out, variables)
        try:
            tin = self.translator.expr(before)
            tout = self.translator.expr(after)
        except Unsupported as e:
            return Outcome(UNSUPPORTED, detail=str(e))
        if res != "unsat":
            res, model = self._query(tin.defined, tout.defined, tin, tout, variables)
        if res == "sat":
            if not self._last_model_agrees:
                return Outcome(COUNTEREXAMPLE, model, "solver", kind=MISMATCH)
            # Is there a point with a different value (or a trap), not only an introduced overflow?
            res2, model2 = self._query(tin.defined, tout.no_trap, tin, tout, variables)
            if res2 == "sat":
                return Outcome(COUNTEREXAMPLE, model2, "solver", kind=MISMATCH)
            return Outcome(COUNTEREXAMPLE, model, "solver", kind=OVERFLOW)
        if res == "unknown":
            return Outcome(UNKNOWN, detail="solver: resource limit")
        return self._proven(before, after, variables, wrap_hit, tin, tout)

    def _proven(self, before: Any, after: Any, variables: Sequence[Any], wrap_hit: Outcome | None,
                tin: Term | None = None, tout: Term | None = None) -> Outcome:
        """A proven refinement, unless the wrap-around bits differ (lower severity)."""
        if wrap_hit is not None:
            return wrap_hit
        if self.wrap:
            try:
                if tin is None or tout is None:
                    tin, tout = self.translator.expr(before), self.translator.expr(after)
            except Unsupported:
                return Outcome(PROVEN)
            res, model = self._query(tin.no_trap, tout.no_trap, tin, tout, variables)
            if res == "sat":
                return Outcome(WRAP, model, "solver")
        return Outcome(PROVEN)

    def _solve(self, s: z3.Solver) -> Any:
        """One solver query, counted and timed for the run's statistics."""
        t0 = time.perf_counter()
        r = s.check()
        self.solver_s += time.perf_counter() - t0
        self.queries += 1
        return r

    def _int_query(self, before: Any, after: Any, variables: Sequence[Any]) -> tuple[str, dict | None]:
        tr = IntTranslator()
        try:
            vin, din = tr.expr(before)
            vout, dout = tr.expr(after)
        except Unsupported:
            return "unsupported", None
        s = z3.SolverFor("QF_NIA")  # nlsat: products of bounded variables in milliseconds
        s.set("rlimit", self.rlimit)
        s.set("timeout", self.timeout_ms)
        s.add(*tr.domain, din, z3.Not(_and(dout, vin == vout)))
        r = self._solve(s)
        if r == z3.sat:
            m = s.model()
            vals = {}
            for v in variables:
                name, dt = str(v.name), str(v.ty)
                val = m.eval(z3.Bool(name) if dt == "bool" else z3.Int(name), model_completion=True)
                vals[name] = int(z3.is_true(val)) if dt == "bool" else val.as_long()
            return "sat", vals
        return ("unsat", None) if r == z3.unsat else ("unknown", None)

    def _classify(self, before: Any, after: Any, model: Mapping[str, int]) -> str | None:
        """MISMATCH or OVERFLOW at a model, by evaluating both sides; None if the model does not
        show a violation under the NumPy semantics (then the bit-vector path decides)."""
        a, b = _eval_at(before, model), _eval_at(after, model)
        if a is None or b is None or not (a.no_overflow[0] and a.no_trap[0]):
            return None
        if b.no_overflow[0] and b.no_trap[0] and a.value[0] == b.value[0]:
            return None
        return OVERFLOW if b.no_trap[0] and a.value[0] == b.value[0] else MISMATCH

    def _find_mismatch(self, before: Any, after: Any, variables: Sequence[Any]) -> Outcome | None:
        """A point where the wrapped bits differ (or the output traps), beyond an introduced overflow."""
        try:
            tin, tout = self.translator.expr(before), self.translator.expr(after)
        except Unsupported:
            return None
        res, model = self._query(tin.defined, tout.no_trap, tin, tout, variables)
        return Outcome(COUNTEREXAMPLE, model, "solver", kind=MISMATCH) if res == "sat" else None

    def _query(self, pre: Any, post: Any, tin: Term, tout: Term, variables: Sequence[Any]) -> tuple[str, dict | None]:
        s = self.solver()
        s.add(pre, z3.Not(_and(post, tin.value == tout.value)))
        r = self._solve(s)
        if r == z3.sat:
            m = s.model()
            # Do the wrapped bits agree at this point (only an introduced overflow)?
            self._last_model_agrees = z3.is_true(m.eval(_and(tout.no_trap, tin.value == tout.value),
                                                        model_completion=True))
            return "sat", model_values(m, variables)
        return ("unsat", None) if r == z3.unsat else ("unknown", None)


def model_values(model: z3.ModelRef, variables: Sequence[Any]) -> dict[str, int]:
    out = {}
    for v in variables:
        val = model.eval(z3_var(v), model_completion=True)
        if z3.is_bv_value(val):
            out[str(v.name)] = val.as_signed_long()
        elif z3.is_true(val) or z3.is_false(val):
            out[str(v.name)] = int(z3.is_true(val))
        else:
            out[str(v.name)] = 0  # floats: not screened nor confirmed with a literal value
    return out


def _eval_at(e: Any, values: Mapping[str, int]) -> Any:
    env = {}
    for v in free_vars(e):
        dt = str(v.ty)
        if is_float(dt):
            return None
        big = int_type(dt).bits > 32
        env[str(v.name)] = np.array([values.get(str(v.name), 0)], dtype=object if big else np.int64)
    return NumpyEvaluator(env, 1).eval(e)


def math_value(e: Any, values: Mapping[str, int]) -> int | None:
    """The value of e at `values` under the NumPy semantics (None if undefined or not modelled)."""
    env = {}
    for v in free_vars(e):
        big = int_type(str(v.ty)).bits > 32 if not is_float(str(v.ty)) else False
        env[str(v.name)] = np.array([values.get(str(v.name), 0)], dtype=object if big else np.int64)
    b = NumpyEvaluator(env, 1).eval(e)
    if b is None or not (b.no_overflow[0] and b.no_trap[0]):
        return None
    return int(b.value[0])


# ---------------------------------------------------------------------------------------------
# Statements (TIR passes): compare the final buffer contents from equal initial state
# ---------------------------------------------------------------------------------------------

class StmtChecker:
    """Refinement of PrimFunc bodies over scalar params and 1-D buffers (by name)."""

    def __init__(self, rlimit: int = 2_000_000, timeout_ms: int = 20_000) -> None:
        self.rlimit = rlimit
        self.timeout_ms = timeout_ms  # a safety net only: rlimit decides
        self.translator = Z3Translator()

    def check(self, before: Any, after: Any, buffers: Mapping[str, tuple[str, int]],
              scalars: Sequence[Any]) -> Outcome:
        if _structural_equal(before.body, after.body):
            return Outcome(UNCHANGED)
        try:
            st0 = initial_state(buffers)
            s_in = run_stmt(self.translator, before.body, st0)
            s_out = run_stmt(self.translator, after.body, st0)
        except Unsupported as e:
            return Outcome(UNSUPPORTED, detail=str(e))
        same = z3.And(*[z3.Select(s_in.arrays[n], i) == z3.Select(s_out.arrays[n], i)
                        for n, (_dt, size) in buffers.items() for i in range(size)])
        for status, pre, post in ((COUNTEREXAMPLE, z3.And(s_in.no_overflow, s_in.no_trap),
                                   z3.And(s_out.no_overflow, s_out.no_trap)),
                                  (WRAP, s_in.no_trap, s_out.no_trap)):
            s = z3.Solver()
            s.set("rlimit", self.rlimit)
            s.set("timeout", self.timeout_ms)
            s.add(pre, z3.Not(z3.And(post, same)))
            r = s.check()
            if r == z3.unknown:
                return Outcome(UNKNOWN, detail="solver: unknown (timeout)")
            if r == z3.sat:
                kind = ""
                if status == COUNTEREXAMPLE:
                    # A different final state (or a trap), or only an overflow the input did not have?
                    s2 = z3.Solver()
                    s2.set("rlimit", self.rlimit)
                    s2.set("timeout", self.timeout_ms)
                    s2.add(pre, z3.Not(z3.And(s_out.no_trap, same)))
                    if s2.check() == z3.sat:
                        s, kind = s2, MISMATCH
                    else:
                        kind = OVERFLOW
                m = s.model()
                model = model_values(m, scalars)
                for n, (_dt, size) in buffers.items():
                    for i in range(size):
                        val = m.eval(z3.Select(st0.arrays[n], i), model_completion=True)
                        model[f"{n}[{i}]"] = val.as_signed_long()
                return Outcome(status, model, "solver", kind=kind)
        return Outcome(PROVEN)


# ---------------------------------------------------------------------------------------------
# Runs: enumerate, transform, check, confirm, count
# ---------------------------------------------------------------------------------------------

@dataclass
class Finding:
    """A refinement violation or a wrap-around-only difference, with its reproducer."""

    status: str
    before: str
    after: str
    model: dict[str, int]
    source: str
    script: str
    confirmation: Confirmation | None = None
    label: str = ""
    kind: str = ""  # MISMATCH / OVERFLOW for refinement violations
    index: int = -1  # position of the input in the enumeration
    pattern: str = ""  # pattern_of(before, after)

    @property
    def confirmed(self) -> bool:
        return bool(self.confirmation and self.confirmation.confirmed)


COUNTERS = ("enumerated", "unchanged", "proven", "wrap_only", "candidates", "unknown", "unsupported", "errors")


@dataclass
class RunStats:
    enumerated: int = 0
    unchanged: int = 0
    proven: int = 0
    wrap_only: int = 0
    candidates: int = 0  # refinement violations found by screen or solver, before confirmation
    unknown: int = 0
    unsupported: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    # message pattern -> (input index, input or None once sent between processes, message)
    error_examples: dict[str, tuple[int, Any, str]] = field(default_factory=dict)
    error_counts: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    elapsed_s: float = 0.0
    solver_s: float = 0.0
    queries: int = 0

    def add(self, other: RunStats) -> None:
        for k in COUNTERS:
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.error_samples += other.error_samples
        for k, v in other.error_examples.items():
            self.error_examples.setdefault(k, v)
        for k, n in other.error_counts.items():
            self.error_counts[k] = self.error_counts.get(k, 0) + n
        self.findings += other.findings
        self.solver_s += other.solver_s
        self.queries += other.queries

    @property
    def counterexamples(self) -> list[Finding]:
        return [f for f in self.findings if f.status == COUNTEREXAMPLE and f.confirmed]

    @property
    def unconfirmed(self) -> list[Finding]:
        return [f for f in self.findings if f.status == COUNTEREXAMPLE and not f.confirmed]

    def totals(self) -> tuple[int, int, int]:
        """(proven, counterexamples, unknown): every enumerated input lands in exactly one.
        Unconfirmed refinement violations count as unknown: only confirmed ones are reported."""
        cex = len(self.counterexamples)
        proven = self.unchanged + self.proven + self.wrap_only
        unknown = self.unknown + self.unsupported + self.errors + (self.candidates - cex)
        return proven, cex, unknown


Transformation = Callable[[Any], Any]
Pending = tuple[int, Any, Any, Outcome]  # index, before, after, outcome


def check_exprs(inputs: Iterable[Any], transform: Transformation, checker: ExprChecker, *, label: str = "",
                progress: Callable[[RunStats], None] | None = None, progress_every: int = 2000,
                select: Callable[[int], bool] | None = None) -> tuple[RunStats, list[Pending]]:
    """Transform and check every input (those whose index `select` accepts); violations are returned
    for confirmation, unconfirmed."""
    stats = RunStats()
    t0 = time.perf_counter()
    pending: list[Pending] = []
    for index, e in enumerate(inputs):
        if select is not None and not select(index):
            continue
        stats.enumerated += 1
        try:
            out = transform(e)
        except Exception as ex:  # the transformation's own error (e.g. a constant zero divisor)
            stats.errors += 1
            lines = str(ex).strip().splitlines()
            msg = lines[-1][:200] if lines else type(ex).__name__
            key = re.sub(r"-?\d+", "N", msg)
            if key not in stats.error_examples:
                stats.error_examples[key] = (index, e, msg)
                stats.error_samples.append(f"{e}: {msg}")
            stats.error_counts[key] = stats.error_counts.get(key, 0) + 1
            continue
        res = checker.check(e, out)
        if res.status == UNCHANGED:
            stats.unchanged += 1
        elif res.status == PROVEN:
            stats.proven += 1
        elif res.status == WRAP:
            stats.wrap_only += 1
            pending.append((index, e, out, res))
        elif res.status == COUNTEREXAMPLE:
            stats.candidates += 1
            pending.append((index, e, out, res))
        elif res.status == UNSUPPORTED:
            stats.unsupported += 1
        else:
            stats.unknown += 1
        if progress is not None and stats.enumerated % progress_every == 0:
            stats.elapsed_s = time.perf_counter() - t0
            stats.solver_s, stats.queries = checker.solver_s, checker.queries
            progress(stats)
    stats.elapsed_s = time.perf_counter() - t0
    stats.solver_s, stats.queries = checker.solver_s, checker.queries
    return stats, pending


# Confirmation budget per class (each reproducer costs ~1 s: a fresh interpreter and two compiles).
DEFAULT_CONFIRM = {MISMATCH: 40, OVERFLOW: 10, WRAP: 3}


def pattern_of(before: str, after: str) -> str:
    """The rewrite with constants and variables anonymized: violations of one simplifier rule at
    different constants share it (a confirmation per pattern says more than many of one rule)."""
    def anon(t: str) -> str:
        return re.sub(r"\bx\d+\b", "v", re.sub(r"(?<![\w.])-?\d+", "c", t))
    return f"{anon(before)}  ->  {anon(after)}"


def confirm_all(pending: Sequence[Pending], after_code: str | None, label: str,
                budget: Mapping[str, int] | None = None) -> list[Finding]:
    """Run reproducers for the pending violations, worst class first, one per rewrite pattern
    first, within the budget; the rest are listed unconfirmed (without a script)."""
    budget = dict(DEFAULT_CONFIRM if budget is None else budget)

    def severity(p: Pending) -> int:
        _i, e, out, res = p
        if res.status != COUNTEREXAMPLE:
            return 3
        if res.kind == OVERFLOW:
            return 2
        b = _eval_at(out, res.model or {})  # a wrong value without any overflow in the output: worst
        return 0 if b is not None and bool(b.no_overflow[0] and b.no_trap[0]) else 1

    ranked = sorted(pending, key=lambda p: (severity(p), p[0]))
    tried: set[str] = set()
    findings = []
    for index, e, out, res in ranked:
        cls = res.kind if res.status == COUNTEREXAMPLE else WRAP
        pattern = pattern_of(str(e), str(out))
        if budget.get(cls, 0) <= 0 or pattern in tried:
            findings.append(Finding(res.status, str(e), str(out), res.model or {}, res.source, "", None, label,
                                    res.kind, index, pattern))
            continue
        budget[cls] -= 1
        f = confirm_expr(e, out, res, after_code, label)
        f.index, f.pattern = index, pattern
        if f.confirmed:
            tried.add(pattern)  # an unconfirmed one leaves the pattern open for another instance
        findings.append(f)
    return findings


def verify_exprs(inputs: Iterable[Any], transform: Transformation, checker: ExprChecker, *,
                 after_code: str | None = None, label: str = "", budget: Mapping[str, int] | None = None,
                 progress: Callable[[RunStats], None] | None = None) -> RunStats:
    """Check transform(e) against e for every input and confirm the violations concretely.
    after_code: the TVM call that rebuilds `after` from `before` in a reproducer (None: the
    output is written out literally)."""
    t0 = time.perf_counter()
    stats, pending = check_exprs(inputs, transform, checker, label=label, progress=progress)
    stats.findings = confirm_all(pending, after_code, label, budget)
    stats.elapsed_s = time.perf_counter() - t0
    return stats


def confirm_expr(before: Any, after: Any, res: Outcome, after_code: str | None, label: str) -> Finding:
    model = res.model or {}
    expected = math_value(before, model)
    if res.status == WRAP:
        what = "wrap-around-only difference"
        semantics = ("At these values `before` overflows (wrap-around) but has no zero divisor: the rewrite is a\n"
                     "refinement (overflow is undefined for the simplifier) yet changes the wrapped bits.")
    else:
        what = "refinement violation" + (" (the output overflows where the input does not)" if res.kind == OVERFLOW else "")
        semantics = SEMANTICS_NOTE
    title = f"{label}: {what}: {before}  ->  {after}  at {model}"
    try:
        script = expr_reproducer(before, after, model, expected, after_code, title, semantics)
    except Unsupported as e:
        return Finding(res.status, str(before), str(after), model, res.source, "", Confirmation(False, str(e)), label,
                       res.kind)
    return Finding(res.status, str(before), str(after), model, res.source, script, run_reproducer(script), label,
                   res.kind)


def verify_funcs(inputs: Iterable[Any], pass_name: str, pass_code: str, apply: Transformation,
                 checker: StmtChecker, buffers: Mapping[str, tuple[str, int]], *, disabled: Sequence[str] = (),
                 max_confirm: int = 25, progress: Callable[[RunStats], None] | None = None,
                 progress_every: int = 500) -> RunStats:
    """Check a PrimFunc pass on every input function: final buffers from equal initial state."""
    stats = RunStats()
    t0 = time.perf_counter()
    n_confirm = 0
    for f in inputs:
        stats.enumerated += 1
        try:
            g = apply(f)
        except Exception as ex:
            stats.errors += 1
            if len(stats.error_samples) < 20:
                stats.error_samples.append(f"{pass_name}: {str(ex).splitlines()[0][:160] if str(ex) else type(ex).__name__}")
            continue
        scalars = [p for p in f.params if str(p.ty) in ("int32", "int64", "int8", "int16", "bool")]
        res = checker.check(f, g, buffers, scalars)
        if res.status == UNCHANGED:
            stats.unchanged += 1
        elif res.status == PROVEN:
            stats.proven += 1
        elif res.status in (WRAP, COUNTEREXAMPLE):
            if res.status == WRAP:
                stats.wrap_only += 1
            else:
                stats.candidates += 1
            model = res.model or {}
            script, conf = "", None
            if res.status == COUNTEREXAMPLE and n_confirm < max_confirm:
                n_confirm += 1
                script = stmt_reproducer(f, pass_code, disabled, [model.get(str(p.name), 0) for p in scalars],
                                         {n: [model.get(f"{n}[{i}]", 0) for i in range(size)]
                                          for n, (_dt, size) in buffers.items()},
                                         f"{pass_name}: refinement violation at {model}")
                conf = run_reproducer(script)
            stats.findings.append(Finding(res.status, f.script(), g.script(), model, res.source, script, conf, pass_name,
                                          res.kind, stats.enumerated - 1))
        elif res.status == UNSUPPORTED:
            stats.unsupported += 1
        else:
            stats.unknown += 1
        if progress is not None and stats.enumerated % progress_every == 0:
            stats.elapsed_s = time.perf_counter() - t0
            progress(stats)
    stats.elapsed_s = time.perf_counter() - t0
    return stats
