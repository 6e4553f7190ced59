"""Tzer (Liu et al., OOPSLA 2022, Algorithm 1): TVM's low-level IR (TIR PrimFuncs) mutated jointly
with sequences of TIR passes, with coverage feedback.

The pool holds seeds <F, P, N>: a PrimFunc, a pass sequence and the number of times mutating F
found nothing new. A step picks a seed; while N < N_max it mutates F (IR mutation, P kept), and
once N reaches N_max it mutates P instead (F kept) and resets N. A mutant that adds coverage
joins the pool; otherwise the picked seed's N grows.

Variants (the ablation in bench/tzer_ablation.py; `joint` is the strategy):
  general        general mutators only, seeds never grow, one fixed pass sequence
  feedback       + coverage feedback (coverage-adding mutants join the pool)
  domain         + domain-specific mutators (loops, memory, threads)
  random-passes  + a random pass sequence for every test
  joint          + joint evolutionary IR/pass mutation (Algorithm 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.backends.tvm import tir_passes as tpasses
from dlcfuzz.errors import UsageError
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import dedup_key, with_option
from dlcfuzz.oracle.numeric import compare
from dlcfuzz.oracle.signature import error_key, normalize
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.strategies.base import Context, Finding, Judgement, Option, Reduction, Strategy, Test, judgement_of_failure
from dlcfuzz.tvm_tir.runner import PLANTED, POISON, decode_reply, decode_test, encode_test

if TYPE_CHECKING:
    from dlcfuzz.exec.pool import Pool, TaskResult

HANDLER = "dlcfuzz.tvm_tir.runner:make_handler"
VARIANTS = ("general", "feedback", "domain", "random-passes", "joint")
# The fixed sequence of the variants without pass mutation: s_tir's default pipeline order.
DEFAULT_SEQUENCE = tpasses.repair(["CanonicalizeLoop", "StmtSimplify", "FlattenBuffer", "NarrowDataType", "LoopPartition",
                                   "VectorizeLoop", "InjectVirtualThread", "StorageRewrite", "HoistIfThenElse",
                                   "UnrollLoop", "RenormalizeSplitPattern", "StmtSimplify", "RemoveNoOp",
                                   "RewriteUnsafeSelect", "CommonSubexprElim"])
PERF_FACTOR = 3.0  # optimized slower than unoptimized by this factor ...
PERF_MIN_S = 2e-4  # ... and by at least this much per call: reported after a re-measurement
REMEASURE_REPEAT = 30
PERF_EXEMPT = {"InstrumentBoundCheckers"}  # slower by design: adds a check to every access
# Errors that are a pass refusing input outside its documented domain, not a bug.
EXPECTED_ERRORS = ("not supported", "Not supported", "is not supported", "Cannot vectorize",
                   "Cannot unroll non-constant loop")


PLANTED_PASSES: dict[Any, str | None] = {False: None, True: PLANTED, "poison": POISON}  # --planted -> the pass


def planted_option(value: str) -> bool | str:
    """--planted: 0 (none), 1 (the semantics-breaking pass) or poison."""
    return {"0": False, "1": True}.get(value, value)


@dataclass
class Seed:
    func: Any
    script: str
    passes: list[str]
    n: int = 0


@dataclass
class TirTest:
    """The typed payload of a tzer test: the decoded test, the seed it came from, the PrimFunc."""

    test: dict[str, Any]
    parent: int | None = None
    func: Any = None


class TzerStrategy(Strategy):
    name = "tzer"
    summary = "TVM TIR and pass sequences, jointly mutated with coverage feedback (Tzer)"
    handler = HANDLER
    compilers = ("tvm",)
    options = (Option("variant", "joint", f"ablation variant: {', '.join(VARIANTS)}"),
               Option("coverage", ["ir", "python"], "coverage sources, comma-separated: ir, python, sancov:LIB",
                      lambda s: [x for x in s.split(",") if x]),
               Option("n_max", 5, "IR mutations without new coverage before the pass sequence mutates", int),
               Option("graphs", 6, "random graphs whose legalized PrimFuncs seed the pool", int),
               Option("zoo", True, "seed the pool with the tiny zoo models' PrimFuncs too", lambda s: s != "0"),
               Option("planted", False, "add a planted pass (tests): 1, one that breaks semantics; poison, one that "
                      "raises and damages its worker (every later build of the function raises)", planted_option))

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.counts.update(valuable=0, mutants=0, well_formed=0, mutator_errors=0)
        self.planted = PLANTED_PASSES[self.params["planted"]]  # None, PLANTED or POISON
        self.pass_pool = list(tpasses.PASSES) + ([self.planted] if self.planted else [])
        self.pool: list[Seed] = []
        self.known_minimal: dict[str, list[list[str]]] = {}  # verdict key -> minimal pass sequences found

    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        from dlcfuzz.tvm_tir.coverage import parse_sources

        if params["planted"] not in PLANTED_PASSES:
            raise UsageError(f"--planted must be 0, 1 or poison, not {params['planted']!r}")
        if params["variant"] not in VARIANTS:
            raise UsageError(f"unknown tzer variant {params['variant']!r} (choose from {', '.join(VARIANTS)})")
        try:
            parse_sources(",".join(params["coverage"]))
        except ValueError as e:
            raise UsageError(str(e)) from None

    def handler_init(self) -> dict[str, Any]:
        return {**super().handler_init(), "coverage": self.params["coverage"]}

    def deadline_s(self) -> float:
        return 60.0

    def start(self, pool: Pool, resumed: bool) -> None:
        """The seed pool: PrimFuncs of legalized random graphs and tiny zoo models; resumed, also
        every stored mutant that added coverage."""
        from dlcfuzz.tvm_tir.seeds import parse, seed_funcs

        rng = np.random.default_rng([self.ctx.seed, 1])
        p = self.params
        for f in seed_funcs(self.ctx.seed, p["graphs"], p["zoo"]):
            ps = DEFAULT_SEQUENCE if p["variant"] in ("general", "feedback", "domain") else self.sample_passes(rng)
            self.pool.append(Seed(f, f.script(), list(ps)))
        stored = ((tid - 1, self.ctx.store.test_blob(tid)) for tid in self.ctx.store.coverage_test_ids()) if resumed else ()
        for _seq, blob in self.ctx.own_blobs(stored):
            t = decode_test(blob)
            try:
                self.pool.append(Seed(parse(t["script"]), t["script"], list(t["passes"])))
            except Exception:  # noqa: S112 - a stored mutant this TVM no longer parses is no seed
                continue

    def sample_passes(self, rng: np.random.Generator) -> list[str]:
        seq = tpasses.sample_sequence(rng)
        if self.planted and rng.random() < 0.5:
            seq.insert(int(rng.integers(len(seq) + 1)), self.planted)
        return seq

    def mutate_passes(self, seq: list[str], rng: np.random.Generator) -> list[str]:
        mine = self.planted
        if mine and rng.random() < 0.2:
            return seq + [mine] if mine not in seq else [p for p in seq if p != mine]
        planted = [i for i, p in enumerate(seq) if p == mine]
        out = tpasses.mutate_sequence([p for p in seq if p != mine], rng)
        for i in planted:
            out.insert(min(i, len(out)), mine)
        return out

    # ---- one step of Algorithm 1 ------------------------------------------------
    def make_test(self, seq: int, seed: int) -> Test:
        from dlcfuzz.tvm_tir.tir import DOMAIN, GENERAL, MutationFailed, mutate, well_formed

        rng = np.random.default_rng(seed)
        v = self.params["variant"]
        idx = int(rng.integers(len(self.pool)))
        s = self.pool[idx]
        mutators = list(GENERAL) + (list(DOMAIN) if v in ("domain", "random-passes", "joint") else [])
        mutator = "none"
        if v == "joint" and s.n >= self.params["n_max"]:
            s.n = 0
            passes = self.mutate_passes(s.passes, rng)
            func, script, mutator = s.func, s.script, "passes"
        else:
            passes = self.sample_passes(rng) if v == "random-passes" else list(s.passes)
            func, script = s.func, s.script
            for _ in range(3):
                try:
                    cand, name = mutate(s.func, rng, mutators)
                except MutationFailed:
                    continue
                self.counts["mutants"] += 1
                if well_formed(cand):
                    self.counts["well_formed"] += 1
                    func, script, mutator = cand, cand.script(), name
                    break
        blob = encode_test(script, passes, int(rng.integers(1 << 31)), mutator=mutator)
        return Test(seq, seed, blob, TirTest(decode_test(blob), idx, func))

    def decode(self, blob: bytes) -> TirTest:
        return TirTest(decode_test(blob))

    def size(self, test: Test) -> int:
        return len(test.payload.test["passes"])

    def learn(self, test: Test, j: Judgement, new: list[str]) -> None:
        """Algorithm 1's pool update: a valid mutant that added coverage joins the pool; otherwise
        the picked seed's N grows."""
        tt: TirTest = test.payload
        if j.valid and new:
            self.counts["valuable"] += 1
        if self.params["variant"] == "general" or tt.parent is None:
            return
        if new and j.valid:
            self.pool.append(Seed(tt.func, tt.test["script"], list(tt.test["passes"])))
        elif tt.parent < len(self.pool):
            self.pool[tt.parent].n += 1

    def progress_fields(self) -> str:
        c = self.counts
        wf = 100.0 * c["well_formed"] / c["mutants"] if c["mutants"] else 0.0
        return f"valuable {c['valuable']} well-formed mutants {wf:.0f}% pool {len(self.pool)}"

    # ---- judging ----------------------------------------------------------------
    def judge(self, test: Test, res: TaskResult) -> Judgement:
        t = test.payload.test
        if res.status != "ok":
            return judgement_of_failure(self.ctx.compiler, res, self.native_frames)
        meta, arrays = decode_reply(res.payload)
        items = meta.get("coverage", [])
        if meta.get("invalid"):
            return Judgement([Verdict("unknown", C.INVALID_TEST, meta["invalid"])], coverage=items)
        obs = meta["observations"]
        compiler_s = sum(ob.get("compile_s", 0.0) + (ob.get("run_s") or 0.0) for ob in obs
                         if ob.get("run_s") != float("inf"))
        verdicts, valid = self.compare(t, obs, arrays)
        return Judgement(verdicts, [_Obs(o) for o in obs], valid, items, compiler_s=compiler_s)

    def compare(self, t: dict[str, Any], obs: list[dict[str, Any]], arrays: dict[str, np.ndarray]
                ) -> tuple[list[Verdict], bool]:
        by = {o["config"]: o for o in obs}
        low = by.get("lowest")
        if low is None or low["status"] != "ok":
            return [Verdict("unknown", C.INVALID_TEST, (low or {}).get("error", "lowest configuration missing"))], False
        verdicts: list[Verdict] = []
        compiler = self.ctx.compiler
        ref = [arrays[f"lowest/{k}"] for k in range(low["n"])]
        for name in ("mutated", "default"):
            o = by.get(name)
            if o is None:
                continue
            if o["status"] != "ok":
                err = o.get("error", "")
                if any(p in err for p in EXPECTED_ERRORS):
                    verdicts.append(Verdict("unknown", C.EXPECTED_ERROR, err, [name]))
                    continue
                verdicts.append(Verdict("bug", C.UNEXPECTED_ERROR, f"{err}\n{o.get('traceback', '')}", [name],
                                        key=dedup_key(C.UNEXPECTED_ERROR, compiler, name,
                                                      error_key(err, o.get('traceback'), self.native_frames))))
                continue
            got = [arrays[f"{name}/{k}"] for k in range(o["n"])]
            bad = compare(got, ref)
            if bad:
                m = bad[0]
                verdicts.append(Verdict("bug", C.INCONSISTENCY, f"{name} differs from lowest at buffer {m.index}: {m.detail}",
                                        ["lowest", name], m.index, key=dedup_key(C.INCONSISTENCY, compiler, name, m.reason)))
            elif name == "mutated" and not PERF_EXEMPT & set(t["passes"]) and slow(o, low) and self.remeasured_slow(t):
                verdicts.append(Verdict("bug", C.SLOW, f"mutated {o['run_s'] * 1e6:.0f} us per call vs lowest "
                                        f"{low['run_s'] * 1e6:.0f} us (re-measured over {REMEASURE_REPEAT} calls)",
                                        ["lowest", name], key=dedup_key(C.SLOW, compiler, "mutated")))
        if any(v.category == C.INCONSISTENCY for v in verdicts) and not self.deterministic(t, ref):
            # reading memory nothing wrote, or a race: the test is not deterministic, not the compiler
            verdicts = [v for v in verdicts if v.category != C.INCONSISTENCY] + [Verdict("unknown", C.NONDETERMINISTIC_TEST)]
        return verdicts or [Verdict("pass", C.PASS)], True

    def deterministic(self, t: dict[str, Any], ref: list[np.ndarray]) -> bool:
        """The lowest configuration gives the same results when built and run again."""
        res = self.ctx.reducer_pool().run(encode_test(t["script"], [], t["seed"], configs=["lowest"], repeat=0))
        if res.status != "ok":
            return False
        meta, arrays = decode_reply(res.payload)
        obs = meta.get("observations", [])
        if not obs or obs[0]["status"] != "ok":
            return False
        return not compare([arrays[f"lowest/{k}"] for k in range(obs[0]["n"])], ref)

    def remeasured_slow(self, t: dict[str, Any]) -> bool:
        res = self.ctx.reducer_pool().run(encode_test(t["script"], t["passes"], t["seed"], configs=["lowest", "mutated"],
                                                      repeat=REMEASURE_REPEAT))
        if res.status != "ok":
            return False
        by = {o["config"]: o for o in decode_reply(res.payload)[0]["observations"]}
        return all(by.get(c, {}).get("status") == "ok" for c in ("lowest", "mutated")) and slow(by["mutated"], by["lowest"])

    # ---- findings -------------------------------------------------------------
    def still_fails(self, t: dict[str, Any], v: Verdict, passes: list[str]) -> bool:
        res = self.ctx.reducer_pool().run(encode_test(t["script"], passes, t["seed"], configs=["lowest", "mutated"], repeat=0))
        if res.status != "ok":
            return v.category in (C.CRASH, C.HANG, C.OOM) and res.status in ("crash", "timeout", "oom")
        meta, arrays = decode_reply(res.payload)
        by = {o["config"]: o for o in meta.get("observations", [])}
        low, mut = by.get("lowest"), by.get("mutated")
        if not low or not mut or low["status"] != "ok":
            return False
        if v.category == C.UNEXPECTED_ERROR:
            return mut["status"] != "ok" and normalize(mut.get("error", ""))[:120] == normalize(v.detail.splitlines()[0])[:120]
        if v.category == C.INCONSISTENCY:
            return mut["status"] == "ok" and bool(compare([arrays[f"mutated/{k}"] for k in range(mut["n"])],
                                                          [arrays[f"lowest/{k}"] for k in range(low["n"])]))
        return False

    def minimal_passes(self, t: dict[str, Any], v: Verdict) -> list[str]:
        """ddmin over the pass sequence (findings of the mutated configuration); a known root cause
        (a minimal sequence found before that still shows it) costs one check."""
        from dlcfuzz.reduce.ddmin import ddmin

        passes = list(t["passes"])
        known = next((m for m in self.known_minimal.get(v.key, []) if set(m) <= set(passes)
                      and self.still_fails(t, v, m)), None)
        if known is not None:
            return known
        if v.category in (C.INCONSISTENCY, C.UNEXPECTED_ERROR, C.CRASH) and self.ctx.reduce and passes:
            keep = ddmin(list(range(len(passes))), self.ctx.budget.guard(
                lambda sub: self.still_fails(t, v, [passes[i] for i in sorted(sub)])), max_checks=24)
            passes = [passes[i] for i in sorted(keep)]
        return passes

    def early_key(self, test: Test, v: Verdict) -> str | None:
        return v.key if "mutated" not in v.configs else None

    def reduce(self, test: Test, v: Verdict) -> Reduction:
        t = test.payload.test
        minimal = self.minimal_passes(t, v) if "mutated" in v.configs else []
        if "mutated" in v.configs:
            if minimal != list(t["passes"]):
                # the minimal sequence must show it on its own, not thanks to what earlier checks left in the worker
                # (then it would be no root cause to look for first in later findings either)
                kept = self.unless_shown_fresh(test, v, lambda: self.still_fails(t, v, minimal))
                if kept is not None:
                    return kept
            if minimal not in self.known_minimal.setdefault(v.key, []):
                self.known_minimal[v.key].append(minimal)
        red = self.reduction(test, v, minimal)
        if v.category == C.INCONSISTENCY and "mutated" in v.configs and not minimal and t["passes"]:
            red.dismissed = C.NONDETERMINISTIC_TEST  # it differs with no pass at all: from the very same build
        return red

    def unreduced(self, test: Test, v: Verdict) -> Reduction:
        t = test.payload.test
        return self.reduction(test, v, list(t["passes"]) if "mutated" in v.configs else [])

    def reduction(self, test: Test, v: Verdict, minimal: list[str]) -> Reduction:
        t = test.payload.test
        key = with_option(v.key, "passes", ','.join(sorted(set(minimal)))) if "mutated" in v.configs else v.key
        version = self.ctx.version

        def write(f: Finding) -> str:
            script = reproducer(t["script"], minimal, t["seed"], v, f.title, version)
            (f.folder / "repro.py").write_text(script)
            (f.folder / "func.py").write_text(t["script"])
            (f.folder / "detail.txt").write_text(f"{f.title}\nsignature {f.signature}\nkey {key}\ntest {f.test_id}\n"
                                                 f"passes {t['passes']}\nminimal passes {minimal}\n\n{v.detail}\n")
            return script

        return Reduction(key, len(t["passes"]), len(minimal), write, f"passes {minimal}",
                         not_minimal=self.ctx.budget.stopped)


def slow(o: dict[str, Any], low: dict[str, Any]) -> bool:
    a, b = o.get("run_s") or 0.0, low.get("run_s") or 0.0
    return a > PERF_FACTOR * b and a - b > PERF_MIN_S


class _Obs:
    """The store's observation row from a worker's observation dict."""

    def __init__(self, o: dict[str, Any]) -> None:
        self.config = o["config"]
        self.status = o["status"]
        self.error = o.get("error")
        self.compile_s = o.get("compile_s", 0.0)
        run_s = o.get("run_s")
        self.run_s = run_s if run_s is not None and run_s != float("inf") else 0.0
        self.input_set = 0  # one input per test


def reproducer(script: str, passes: list[str], seed: int, v: Verdict, title: str, version: str) -> str:
    """A standalone script (TVM's public API + NumPy): parse the PrimFunc from TVMScript, build it
    with no passes and with the pass sequence, run both on the same inputs, compare."""
    specs = []
    for p in passes:
        if p in (PLANTED, POISON):
            specs.append(("planted", p, [], {}))
        else:
            tp = tpasses.PASSES[p]
            specs.append((tp.module, tp.ctor, list(tp.args), tp.config))
    tail = [(tp.module, tp.ctor, list(tp.args), tp.config) for tp in tpasses.MANDATORY]
    planted = any(s[0] == "planted" for s in specs)
    return f'''"""{title}

{v.detail.splitlines()[0] if v.detail else v.category}
Found by dlcfuzz (Tzer strategy) against {version}. Exits 1 with "BUG REPRODUCED" while the bug is present.
"""
import sys

import numpy as np
import tvm
from tvm import s_tir, tirx
from tvm.tirx import compilation_pipeline as cp

SCRIPT = {script!r}
PASSES = {specs!r}  # (module, constructor, arguments, PassContext config)
TAIL = {tail!r}  # what every build runs last
SEED = {seed}
DEFAULT_PIPELINE = {"mutated" not in v.configs}  # True: compare with TVM's default pipeline instead of PASSES


@tvm.transform.module_pass(opt_level=0)
def identity(mod, _ctx):
    return mod


tirx.register_tir_pipeline("repro-identity", lambda: (identity, cp.finalize_host_passes, cp.finalize_device_passes))
{"from dlcfuzz.tvm_tir.runner import apply_pass  # the planted (deliberately wrong) passes" if planted else ""}


def build(func, passes):
    llvm = tvm.target.Target("llvm")
    mod = tirx.transform.BindTarget(llvm.with_host(llvm))(tvm.IRModule({{"main": func}}))
    for module, ctor, args, config in passes + TAIL:
        if module == "planted":
            mod = apply_pass(ctor, mod)
            continue
        with tvm.transform.PassContext(opt_level=3, config=config):
            mod = getattr((tirx if module == "tirx" else s_tir).transform, ctor)(*args)(mod)
    return tirx.build(mod, target="llvm", pipeline="repro-identity")


def inputs(func):
    rng = np.random.default_rng(SEED)
    out = []
    for p in func.params:
        shape, dt = tuple(int(d) for d in p.shape), str(p.dtype)
        if dt == "bool":
            out.append(rng.random(shape) < 0.5)
        elif dt.startswith(("int", "uint")):
            out.append(rng.integers(0 if dt.startswith("uint") else -8, 9, size=shape).astype(dt))
        else:
            out.append(rng.uniform(-2, 2, size=shape).astype(dt))
    return out


def run(rt, arrays):
    args = [tvm.runtime.tensor(a.copy()) for a in arrays]
    rt["main"](*args)
    return [a.numpy() for a in args]


func = tvm.script.from_source(SCRIPT)
data = inputs(func)
expected = run(build(func, []), data)
try:
    got = run(tirx.build(tvm.IRModule({{"main": func}}), target="llvm") if DEFAULT_PIPELINE else build(func, PASSES), data)
except Exception as e:  # the pass sequence fails on a function the plain build compiles
    print(f"BUG REPRODUCED: {{type(e).__name__}}: {{e}}")
    sys.exit(1)
for i, (g, e) in enumerate(zip(got, expected)):
    both_nan = np.isnan(g) & np.isnan(e) if np.issubdtype(e.dtype, np.floating) else np.zeros(e.shape, bool)
    far = ~both_nan & ~np.isclose(g.astype(np.float64), e.astype(np.float64), rtol=1e-3, atol=1e-3)
    if far.any():
        k = int(np.flatnonzero(far.reshape(-1))[0])
        print(f"BUG REPRODUCED: buffer {{i}} element {{k}}: {{g.reshape(-1)[k]}} with the passes, {{e.reshape(-1)[k]}} without")
        sys.exit(1)
print("not reproduced: the pass sequence preserves the results")
'''
