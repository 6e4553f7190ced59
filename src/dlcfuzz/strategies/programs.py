"""`programs`: programs in the compiler's framework language with the framework's own semantics
(views, in-place ops on views and inputs, aliasing outputs, integer semantics, Python-scalar type
promotion, strided and channels-last inputs), generated from the backend's program dialect
(`Backend.program_dialect()`, programs/core.py) rather than ONNX-operator graphs.

Oracle (PyTorch's fuzzer guidance, plus what mutation needs): the program runs eagerly (the
reference), as a float64 eager reference, and compiled, each on its own copies of the inputs; outputs
and the inputs after the call are compared. Integer and bool results, dtypes and shapes exactly; a
float result is wrong only when the compiled result is further from the float64 reference than eager
is, beyond the dtype's tolerance (`torch._dynamo.utils.same` with `fp64_ref`); where the float64
reference disagrees with eager itself (an integer result that rounding decides, or eager further from
float64 than the tolerance), the output is ill-conditioned: an unknown, not a bug. An eager error is an
invalid program; undefined behaviour the dialect's guards detect is an unknown; a compiled error where
eager runs is a bug. A training program (`Program.steps`) is judged the same way on two more things
per float input: its gradient after the first step and its value after the last (each slot's key
names what differs: output, mutation, gradient, training-state).

Reduction: delta debugging over the statements, each candidate closed over the statements it reads,
then over the outputs, then the regions (one replaced by one of its bodies run once, dead statements in
bodies dropped), then the inputs' layouts (programs/core.reduce_program); the reduced program is checked
once more in a fresh worker (`Strategy.unless_shown_fresh`), else the finding is kept as found.
"""

from __future__ import annotations

import dataclasses
import html
import json
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import UsageError
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import dedup_key, with_option
from dlcfuzz.oracle.numeric import chebyshev, tolerance
from dlcfuzz.oracle.signature import error_key
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.programs.core import (
    FLOAT,
    Dialect,
    Program,
    decode_test,
    encode_test,
    generate,
    reduce_program,
    with_training,
)
from dlcfuzz.strategies.base import (
    Context,
    Finding,
    Judgement,
    Option,
    Reduction,
    Strategy,
    StrategyStore,
    Test,
    judgement_of_failure,
)

if TYPE_CHECKING:
    from dlcfuzz.backends.base import Backend
    from dlcfuzz.exec.pool import TaskResult

HANDLER = "dlcfuzz.exec.programs:make_handler"
SPLICE_STREAM = 0x5EED  # the random stream (with the test's seed) that decides whether a test is spliced
FP64_SLACK = 2.0  # compiled may be this many times further from float64 than eager is (torch's `same`)


@dataclasses.dataclass
class ProgramTest:
    program: Program
    seed: int
    configs: list[tuple[str, dict[str, Any]]]
    spliced: bool = False  # its program starts with a seed the dialect spliced in (Dialect.splice)


@dataclasses.dataclass
class _Obs:
    """The store's observation row of one configuration."""

    config: str
    status: str
    error: str | None = None
    compile_s: float = 0.0
    run_s: float = 0.0
    input_set: int = 0


def dialect_of(backend: Backend | None) -> Dialect | None:
    return backend.program_dialect() if backend is not None else None


class ProgramsStrategy(Strategy):
    name = "programs"
    summary = "programs in the compiler's own framework language and semantics (views, in-place, integer semantics)"
    handler = HANDLER
    regenerable = True  # a test is a pure function of its seed
    options = (Option("stmts", 8, "statements per generated program", int),
               Option("splice", -1.0, "share of programs that start with a seed the dialect splices in (a compiler's "
                      "own replacement pattern); negative: the dialect's own share", float))

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.dialect = dialect_of(ctx.backend)
        if self.dialect is None:
            raise UsageError(f"--strategy programs: {ctx.compiler} has no program language")
        self.counts.update(invalid=0, undefined=0)
        # the compiler's rewrites this strategy's tests fired (worker meta "fired"): of the tests up to a horizon
        # (`fired_before`), and of the judged tests past it, by test number; a spliced test prefers the rewrites
        # not fired by the tests up to its horizon, so its splice is the same whatever --jobs and the timing
        self.fired: set[str] = set()
        self.fired_by: dict[int, list[str]] = {}
        self.in_flight: set[int] = set()  # tests made, not yet judged
        share = self.params["splice"]
        self.splice_share = self.dialect.splice_share if share < 0 else share
        if self.splice_share > 0 and self.dialect.splice_share == 0:
            raise UsageError(f"--splice: {ctx.compiler}'s program language has nothing to splice")

    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        from dlcfuzz.backends import get_backend

        if params["stmts"] < 1:
            raise UsageError("--stmts must be at least 1")
        if params["splice"] > 1:
            raise UsageError("--splice is a share: at most 1")
        if dialect_of(get_backend(compiler)) is None:
            raise UsageError(f"--strategy programs: {compiler} has no program language (Backend.program_dialect)")

    # ---- tests -----------------------------------------------------------
    def make_test(self, seq: int, seed: int) -> Test:
        rng = np.random.default_rng(seed)
        # a share of the programs starts with a seed the dialect splices in (a compiler's own replacement pattern,
        # those not fired yet in this campaign preferred), decided by a stream of its own: an unspliced
        # test is what it was before splicing existed
        splice = None
        if np.random.default_rng([seed, SPLICE_STREAM]).random() < self.splice_share:
            splice = self.dialect.splice(rng, self.fired_before(seq))  # never None: its share is positive
        program = generate(self.dialect, rng, self.params["stmts"], first=splice[0] if splice else None)
        seed_inputs = int(rng.integers(1 << 31))
        configs = self.dialect.per_test_configs(rng, [(c.name, dict(c.options)) for c in self.ctx.configs])
        # drawn last: a seed's program, inputs and configurations are what they were before training existed; a
        # spliced training variant trains (its rewrite matches in a training compile), an inference one does not
        share = self.dialect.train_share if splice is None else float(splice[1])
        program = with_training(program, self.dialect.ops, rng, share)
        pt = ProgramTest(program, seed_inputs, configs, spliced=splice is not None)
        self.in_flight.add(seq)
        return Test(seq, seed, encode_test(pt.program, pt.seed, pt.configs), pt)

    def fired_before(self, seq: int) -> set[str]:
        """The rewrites fired by this strategy's tests up to test `seq`'s horizon (`ready` has them judged)."""
        horizon = self.horizon(seq)
        for s in [s for s in self.fired_by if s <= horizon]:
            self.fired.update(self.fired_by.pop(s))
        return self.fired

    def ready(self, seq: int) -> bool:
        """Test `seq` waits until this strategy's tests up to its horizon are judged (their fired rewrites)."""
        return not self.in_flight or min(self.in_flight) > self.horizon(seq)

    def failed(self, seq: int) -> None:
        self.in_flight.discard(seq)

    def keeps_blob(self, test: Test) -> bool:
        """A spliced test depends on the rewrites fired before it (not a function of its seed alone): kept whole."""
        return bool(getattr(test.payload, "spliced", False))

    def decode(self, blob: bytes) -> ProgramTest:
        pt = ProgramTest(*decode_test(blob))
        pt.spliced = any(s.op in self.dialect.splice_ops for s in pt.program.stmts)
        return pt

    def restore(self, seq: int) -> None:
        """Nothing to rebuild: make_test depends on the seed alone."""

    def size(self, test: Test) -> int:
        return len(test.payload.program.stmts)

    def progress_fields(self) -> str:
        return f"invalid {self.counts['invalid']} undefined {self.counts['undefined']}"

    # ---- judging ---------------------------------------------------------
    def judge(self, test: Test, res: TaskResult) -> Judgement:
        self.in_flight.discard(test.seq)
        if res.status != "ok":
            return judgement_of_failure(self.ctx.compiler, res, self.native_frames)
        from dlcfuzz.ir.blob import unpack

        meta, arrays = unpack(res.payload)
        verdicts, obs = judge_program(self.ctx.compiler, test.payload, meta, arrays, self.native_frames)
        if meta.get("invalid"):
            self.counts["invalid"] += 1
        if meta.get("undefined"):
            self.counts["undefined"] += 1
        compiler_s = sum(o.compile_s for o in obs)
        fired = list(meta.get("fired") or [])
        if fired:  # kept as trigger records (the report's table, `auto`'s first-fired yield)
            self.ctx.store.add_triggers(test.test_id, "programs", dict.fromkeys(fired, True))
            self.fired_by.setdefault(test.seq, []).extend(fired)
        # what acted on the program: the passes its compiles recorded (a dialect's meta "applied") and the rewrites
        # they fired
        applied = sorted({*fired, *(a for r in (meta.get("runs") or {}).values() for a in r.get("applied", ()))})
        return Judgement(verdicts, obs, any(o.status == "ok" and o.config != "eager" for o in obs),
                         compiler_s=compiler_s, fired=fired, applied=applied)

    # ---- findings --------------------------------------------------------
    def early_key(self, test: Test, v: Verdict) -> str | None:
        return None if v.category == C.INCONSISTENCY else v.key  # a numeric finding's key names its reduced ops

    def still_fails(self, pt: ProgramTest, v: Verdict, shown: dict[str, str] | None = None) -> Any:
        """Predicate over candidate programs: run in the reducer pool with the finding's configurations,
        does it still show `v`? `shown` collects the detail of each candidate that does (program JSON ->
        detail: the reduced program's reproducer describes its own difference)."""
        configs = [c for c in pt.configs if c[0] in v.configs or c[1].get("backend") == "eager"]

        def predicate(program: Program) -> bool:
            res = self.ctx.reducer_pool().run(encode_test(program, pt.seed, configs))
            if res.status != "ok":
                return v.category in (C.CRASH, C.HANG, C.OOM) and res.status in ("crash", "timeout", "oom")
            from dlcfuzz.ir.blob import unpack

            meta, arrays = unpack(res.payload)
            got, _ = judge_program(self.ctx.compiler, ProgramTest(program, pt.seed, configs), meta, arrays,
                                   self.native_frames)
            same = [x for x in got if x.kind == "bug" and x.category == v.category
                    and (v.category == C.INCONSISTENCY or x.key == v.key)]
            if same and shown is not None:
                shown[program.dumps()] = same[0].detail
            return bool(same)

        return predicate

    def reduce(self, test: Test, v: Verdict) -> Reduction:
        pt: ProgramTest = test.payload
        shown: dict[str, str] = {}
        fails = self.ctx.budget.guard(self.still_fails(pt, v, shown))
        program = reduce_program(pt.program, fails, max_checks=(self.ctx.backend.reduction_checks
                                                                if self.ctx.backend is not None else 40),
                                 ops=self.dialect.ops)
        if program.dumps() != pt.program.dumps():
            # unguarded by the budget: a spent budget must not discard a reduction it made
            kept = self.unless_shown_fresh(test, v, lambda: self.still_fails(pt, v)(program))
            if kept is not None:
                return kept
        red = self.reduction(test, v, program, shown.get(program.dumps()))
        if len(program.stmts) == len(pt.program.stmts) > 1 and self.ctx.budget.stopped is None \
                and not self.still_fails(pt, v)(pt.program):
            red.not_minimal = ("it did not show again when its test was re-run alone (flaky, or it depends on "
                               "the state of the worker that found it)")
        return red

    def unreduced(self, test: Test, v: Verdict) -> Reduction:
        return self.reduction(test, v, test.payload.program)

    def reduction(self, test: Test, v: Verdict, program: Program, reduced_detail: str | None = None) -> Reduction:
        pt: ProgramTest = test.payload
        detail = reduced_detail or v.detail
        key = with_option(v.key, "ops", ",".join(program.ops())) if v.category == C.INCONSISTENCY else v.key
        configs = [c for c in pt.configs if c[0] in v.configs or c[1].get("backend") == "eager"]
        dialect, version = self.dialect, self.ctx.version

        def write(f: Finding) -> str:
            from dlcfuzz.programs.core import emit, value_dtypes

            script = dialect.reproducer(program, pt.seed, configs, f.title, detail, version)
            (f.folder / "repro.py").write_text(script)
            (f.folder / "program.py").write_text(emit(program, dialect.ops))
            # the program (Program.from_json reads it) and its values' dtypes: the finding's dtypes facts
            # (engine/clusters.py), typed here where the dialect's framework is at hand
            (f.folder / "program.json").write_text(
                json.dumps({**program.to_json(), "dtypes": value_dtypes(program, dialect)}, sort_keys=True))
            (f.folder / "original.py").write_text(emit(pt.program, dialect.ops))
            (f.folder / "detail.txt").write_text(f"{f.title}\nsignature {f.signature}\nkey {key}\ntest {f.test_id}\n"
                                                 f"input seed {pt.seed}\nstatements {len(pt.program.stmts)} -> "
                                                 f"{len(program.stmts)}\n\nfound: {v.detail}\nreduced: {detail}\n")
            return script

        return Reduction(key, len(pt.program.stmts), len(program.stmts), write,
                         f"reduced {len(pt.program.stmts)} -> {len(program.stmts)} statements",
                         not_minimal=self.ctx.budget.stopped)

    @classmethod
    def report_section(cls, store: StrategyStore) -> str:
        return "<p>" + html.escape("programs: tests are programs of the compiler's framework language") + "</p>"


# ---- the oracle --------------------------------------------------------------------------------------
def judge_program(compiler: str, pt: ProgramTest, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                  frames: tuple[str, ...] = ()) -> tuple[list[Verdict], list[_Obs]]:
    """Verdicts on one program test's reply (the dialect's `run`): see the module docstring."""
    if meta.get("invalid"):
        return [Verdict("unknown", C.INVALID_TEST, meta["invalid"])], []
    if meta.get("undefined"):
        category, reason = meta["undefined"]
        return [Verdict("unknown", category, reason)], []
    runs: dict[str, dict[str, Any]] = meta["runs"]
    obs = [_Obs(n, r["status"], r.get("error"), r.get("compile_s", 0.0)) for n, r in runs.items()
           if n != "fp64" and r.get("role") != "reference"]
    n_out, n_in, n_grad = int(meta["n_out"]), int(meta["n_in"]), int(meta.get("n_grad", 0))
    slots = ([("out", k) for k in range(n_out)] + [("in", k) for k in range(n_in)]
             + [(kind, k) for kind in ("grad", "param") for k in range(n_grad)])
    params = [i.name for i in pt.program.inputs if i.dtype in FLOAT]
    verdicts: list[Verdict] = []
    unknown: list[Verdict] = []
    for name, r in runs.items():
        if name in ("eager", "fp64") or r.get("role") == "reference":
            continue
        # a transformed configuration (e.g. a vmap) names its own eager and float64 references
        ref_run, f64_run = r.get("reference", "eager"), r.get("reference64", "fp64")
        has_fp64 = runs.get(f64_run, {}).get("status") == "ok"
        if r["status"] != "ok":
            err = r.get("error") or ""
            verdicts.append(Verdict("bug", C.UNEXPECTED_ERROR, f"{err}\n{r.get('traceback', '')}", ["eager", name],
                                    key=dedup_key(C.UNEXPECTED_ERROR, compiler, name,
                                                  error_key(err, r.get("traceback"), frames))))
            continue
        for kind, k in slots:
            got, ref = arrays[f"{name}/{kind}/{k}"], arrays[f"{ref_run}/{kind}/{k}"]
            f64 = arrays.get(f"{f64_run}/{kind}/{k}") if has_fp64 else None
            reason, detail = compare_to_eager(got, ref, f64, float(meta.get("tolerance", 0.0)))
            what = _slot_name(pt.program, params, kind, k, r.get("in_slot", "after the call"))
            if reason == "ill-conditioned":
                unknown.append(Verdict("unknown", C.ILL_CONDITIONED_OUTPUT, f"{what}: {detail}", ["eager", name]))
            elif reason:
                verdicts.append(Verdict("bug", C.INCONSISTENCY, f"{name} differs from {ref_run} at {what}: {detail}",
                                        ["eager", name], k if kind == "out" else -1,
                                        key=dedup_key(C.INCONSISTENCY, compiler, name, reason, SLOT_KEYS[kind])))
                break
    return verdicts or unknown or [Verdict("pass", C.PASS)], obs


SLOT_KEYS = {"out": "output", "in": "mutation", "grad": "gradient", "param": "training-state"}  # a key's last part


def _slot_name(program: Program, params: list[str], kind: str, k: int, in_slot: str = "after the call") -> str:
    """What a compared slot is, in a finding's words (`in_slot`: what a run's input slots hold, e.g. a
    transformed run's tangents)."""
    if kind == "out":
        return f"output {k}"
    if kind == "in":
        return f"input {program.inputs[k].name} {in_slot}"
    if kind == "grad":
        return f"the gradient of {params[k]}"
    return f"{params[k]} after {program.steps} training step{'s' * (program.steps > 1)}"


def compare_to_eager(got: np.ndarray, ref: np.ndarray, f64: np.ndarray | None, floor: float = 0.0
                     ) -> tuple[str | None, str]:
    """(reason, detail): None when `got` is right; "ill-conditioned" when rounding alone decides the
    difference; else the kind of difference (shape, dtype, value, nan). `floor`: the least float tolerance
    (the run's meta "tolerance": a program that computes part of its results in a lower precision than their
    dtype, e.g. a spliced bfloat16 pattern, says that precision's)."""
    if got.shape != ref.shape:
        return "shape", f"shape {got.shape} != {ref.shape}"
    if got.dtype != ref.dtype:
        return "dtype", f"dtype {got.dtype} != {ref.dtype}"
    floating = np.issubdtype(ref.dtype, np.floating)
    if np.array_equal(got, ref, equal_nan=floating):
        return None, ""
    if not floating:
        k = int(np.flatnonzero((got != ref).reshape(-1))[0])
        at = f"flat index {k}: {got.reshape(-1)[k]!r} vs {ref.reshape(-1)[k]!r}"
        if f64 is not None and (f64.shape != ref.shape or not np.array_equal(f64.astype(ref.dtype), ref)):
            return "ill-conditioned", f"the float64 reference disagrees with eager too ({at})"
        return "value", at
    tol = max(tolerance(str(ref.dtype)) or 1e-3, floor)
    if f64 is None or f64.shape != ref.shape:
        d = chebyshev(got, ref)
        nan = (np.isnan(got) != np.isnan(ref)).any()
        if nan:
            return "nan", "NaN positions differ from eager's (no float64 reference)"
        if d > tol:
            return "value", f"distance {d:.3g} > {tol:.3g} from eager (no float64 reference)"
        return None, ""
    fin_got, fin_ref, fin_64 = np.isfinite(got), np.isfinite(ref), np.isfinite(f64)
    if (fin_got != fin_ref).any():
        if (fin_64 != fin_ref).any():
            return "ill-conditioned", "NaN/Inf positions differ, and eager's differ from float64's"
        if (fin_ref & ~fin_got).any():
            return "nan", "NaN/Inf where eager and the float64 reference have numbers"
        return "nan", "numbers where eager and the float64 reference have NaN/Inf"
    e, c = chebyshev(ref, f64), chebyshev(got, f64)
    if c > FP64_SLACK * e + tol:
        return "value", f"distance from float64 {c:.3g} > {FP64_SLACK:g} x eager's {e:.3g} + {tol:.3g}"
    if chebyshev(got, ref) > tol:
        return "ill-conditioned", f"eager itself is {e:.3g} from float64, compiled {c:.3g}"
    return None, ""
