"""Tzer's joint evolutionary loop (Liu et al., OOPSLA 2022, Algorithm 1) over the shared store.

The pool holds seeds <F, P, N>: a PrimFunc, a pass sequence and the number of times mutating F
found nothing new. A step picks a seed; while N < N_max it mutates F (IR mutation, P kept), and
once N reaches N_max it mutates P instead (F kept) and resets N. A mutant that adds coverage
joins the pool; otherwise the picked seed's N grows. Tests run sandboxed in the WorkerPool; every
test is stored before it runs; findings get a standalone reproducer script.

Variants (the ablation in bench/tzer_ablation.py; `joint` is the strategy):
  general        general mutators only, seeds never grow, one fixed pass sequence
  feedback       + coverage feedback (coverage-adding mutants join the pool)
  domain         + domain-specific mutators (loops, memory, threads)
  random-passes  + a random pass sequence for every test
  joint          + joint evolutionary IR/pass mutation (Algorithm 1)
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dlcfuzz.engine.store import Store
from dlcfuzz.errors import UsageError
from dlcfuzz.lowlevel import passes as tpasses
from dlcfuzz.lowlevel.runner import PLANTED, decode_reply, decode_test, encode_test
from dlcfuzz.oracle.numeric import compare
from dlcfuzz.oracle.signature import digest, error_key, normalize
from dlcfuzz.oracle.verdict import Verdict, crash_verdict

HANDLER = "dlcfuzz.lowlevel.runner:make_handler"
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


@dataclass
class TzerOptions:
    seconds: float = 60.0
    jobs: int = 2
    seed: int = 0
    out: Path = Path("runs/tzer")
    max_tests: int | None = None
    variant: str = "joint"
    coverage: list[str] = field(default_factory=lambda: ["ir", "python"])
    n_max: int = 5
    graphs: int = 6  # random graphs whose legalized PrimFuncs seed the pool (plus the tiny zoo models)
    zoo: bool = True
    planted: bool = False  # add the planted semantics-breaking pass to the pass table (tests)
    timeout_s: float = 60.0
    memory_mb: int = 4096
    reduce: bool = True
    quiet: bool = False
    store: bool = True  # False: no store, no findings on disk (the ablation only counts coverage)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["out"] = str(self.out)
        return d


@dataclass
class Seed:
    func: Any
    script: str
    passes: list[str]
    n: int = 0


class TzerCampaign:
    def __init__(self, opts: TzerOptions, resume: bool = False) -> None:
        from dlcfuzz.lowlevel.coverage import parse_sources

        self.opts = opts
        self.out = Path(opts.out)
        self.store: Store | None = None
        if resume:
            path = self.out / "store.sqlite"
            if not path.exists():
                raise UsageError(f"--resume: no campaign store at {path}")
            self.store = Store(path, create=False)
            first = self.store.first_run()
            if first is None or first["strategy"] != "tzer":
                raise UsageError(f"--resume: {path} holds no tzer campaign")
            for k in ("seed", "variant", "coverage", "n_max", "graphs", "zoo", "planted"):
                if k in first["args"]:
                    setattr(self.opts, k, first["args"][k])
        else:
            if opts.variant not in VARIANTS:
                raise UsageError(f"unknown tzer variant {opts.variant!r} (choose from {', '.join(VARIANTS)})")
            if opts.jobs < 1:
                raise UsageError("--jobs must be at least 1")
            try:
                parse_sources(",".join(opts.coverage))
            except ValueError as e:
                raise UsageError(str(e)) from None
            if opts.store:
                if (self.out / "store.sqlite").exists():
                    raise UsageError(f"{self.out} already holds a campaign: use --resume {self.out} or another --out")
                try:
                    self.out.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise UsageError(f"cannot create {self.out}: {e.strerror}") from None
                self.store = Store(self.out / "store.sqlite")
        import tvm

        self.version = f"apache-tvm {tvm.__version__}"
        self.run_id = self.store.new_run(self.opts.seed, "tvm", self.version, "tzer", self.opts.to_json()) if self.store else 0
        self.covered: set[str] = set(self.store.coverage()) if self.store else set()
        self.counts = {"tests": 0, "valid": 0, "valuable": 0, "bugs": 0, "unknown": 0, "findings": 0, "distinct": 0,
                       "mutants": 0, "well_formed": 0, "invalid": 0, "mutator_errors": 0}
        self.compiler_s = 0.0
        self.curve: list[tuple[float, int, int]] = []  # (elapsed, tests, coverage items)
        self.pass_pool = list(tpasses.PASSES) + ([PLANTED] if self.opts.planted else [])
        self.pool: list[Seed] = []
        self._reducer: Any = None
        self.known_minimal: dict[str, list[list[str]]] = {}  # verdict key -> minimal pass sequences found

    # ---- set-up ------------------------------------------------------------
    def initial_pool(self) -> list[Seed]:
        from dlcfuzz.lowlevel.seeds import seed_funcs

        rng = np.random.default_rng([self.opts.seed, 1])
        out = []
        for f in seed_funcs(self.opts.seed, self.opts.graphs, self.opts.zoo):
            ps = DEFAULT_SEQUENCE if self.opts.variant in ("general", "feedback", "domain") else self.sample_passes(rng)
            out.append(Seed(f, f.script(), list(ps)))
        if self.store is not None:  # resumed: the mutants that added coverage are seeds again
            from dlcfuzz.lowlevel.seeds import parse

            for (tid,) in self.store.db.execute("SELECT DISTINCT test_id FROM coverage ORDER BY test_id").fetchall():
                t = decode_test(self.store.test_blob(tid))
                try:
                    out.append(Seed(parse(t["script"]), t["script"], list(t["passes"])))
                except Exception:
                    continue
        return out

    def sample_passes(self, rng: np.random.Generator) -> list[str]:
        seq = tpasses.sample_sequence(rng)
        if self.opts.planted and rng.random() < 0.5:
            seq.insert(int(rng.integers(len(seq) + 1)), PLANTED)
        return seq

    def mutate_passes(self, seq: list[str], rng: np.random.Generator) -> list[str]:
        if self.opts.planted and rng.random() < 0.2:
            return seq + [PLANTED] if PLANTED not in seq else [p for p in seq if p != PLANTED]
        planted = [i for i, p in enumerate(seq) if p == PLANTED]
        out = tpasses.mutate_sequence([p for p in seq if p != PLANTED], rng)
        for i in planted:
            out.insert(min(i, len(out)), PLANTED)
        return out

    # ---- one step of Algorithm 1 ------------------------------------------------
    def make_test(self, seq: int) -> tuple[bytes, int | None, dict[str, Any]]:
        """The next test: (blob, index of the seed it came from or None, info)."""
        from dlcfuzz.oracle.policy import test_seed
        from dlcfuzz.lowlevel.tir import DOMAIN, GENERAL, MutationFailed, mutate, well_formed

        rng = np.random.default_rng(test_seed(self.opts.seed, seq))
        v = self.opts.variant
        idx = int(rng.integers(len(self.pool)))
        s = self.pool[idx]
        mutators = list(GENERAL) + (list(DOMAIN) if v in ("domain", "random-passes", "joint") else [])
        info: dict[str, Any] = {"parent": idx}
        if v == "joint" and s.n >= self.opts.n_max:
            s.n = 0
            passes = self.mutate_passes(s.passes, rng)
            func, script, info["mutator"] = s.func, s.script, "passes"
        else:
            passes = self.sample_passes(rng) if v == "random-passes" else list(s.passes)
            func, script = s.func, s.script
            for _ in range(3):
                try:
                    cand, name = mutate(s.func, rng, mutators)
                except MutationFailed:
                    continue
                except Exception as e:  # a mutator's own bug: counted and shown, never fatal to the campaign
                    self.counts["mutator_errors"] += 1
                    if self.counts["mutator_errors"] <= 3:
                        self.log(f"mutator error: {type(e).__name__}: {str(e)[:200]}")
                    continue
                self.counts["mutants"] += 1
                if well_formed(cand):
                    self.counts["well_formed"] += 1
                    func, script, info["mutator"] = cand, cand.script(), name
                    break
        info["func"] = func
        blob = encode_test(script, passes, int(rng.integers(1 << 31)), mutator=info.get("mutator", "none"))
        return blob, idx, info

    def on_result(self, idx: int | None, info: dict[str, Any], blob: bytes, valid: bool, items: list[str]) -> list[str]:
        """Coverage bookkeeping and Algorithm 1's pool update; returns the items this test added."""
        new = [i for i in items if i not in self.covered]
        self.covered.update(new)
        if valid and new:
            self.counts["valuable"] += 1
        if self.opts.variant == "general" or idx is None:
            return new
        if new and valid:
            t = decode_test(blob)
            self.pool.append(Seed(info["func"], t["script"], list(t["passes"])))
        elif idx < len(self.pool):
            self.pool[idx].n += 1
        return new

    # ---- the loop -------------------------------------------------------------
    def log(self, msg: str) -> None:
        if not self.opts.quiet:
            print(msg, file=sys.stderr, flush=True)

    def progress(self, elapsed: float) -> None:
        c = self.counts
        valid = 100.0 * c["valid"] / c["tests"] if c["tests"] else 0.0
        wf = 100.0 * c["well_formed"] / c["mutants"] if c["mutants"] else 0.0
        self.log(f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}] tests {c['tests']} valid {valid:.0f}% "
                 f"valuable {c['valuable']} coverage {len(self.covered)} findings {c['findings']} "
                 f"(distinct {c['distinct']}) well-formed mutants {wf:.0f}% pool {len(self.pool)}")

    def save_stats(self, elapsed: float) -> None:
        self.curve.append((elapsed, self.counts["tests"], len(self.covered)))
        if self.store is None:
            return
        c = self.counts
        self.store.add_stats(self.run_id, elapsed=elapsed, tests=c["tests"], valid=c["valid"], bugs=c["bugs"],
                             unknown=c["unknown"], findings=c["findings"], distinct_findings=c["distinct"],
                             compiler_s=self.compiler_s)
        self.store.add_coverage_point(self.run_id, elapsed, c["tests"], len(self.covered), c["valuable"],
                                      c["mutants"], c["well_formed"])

    def run(self) -> Path | None:
        from dlcfuzz.exec.pool import WorkerPool

        o = self.opts
        self.pool = self.initial_pool()
        start = time.monotonic()
        stop_at = start + o.seconds
        with WorkerPool(HANDLER, {"coverage": o.coverage}, jobs=o.jobs, timeout_s=o.timeout_s,
                        memory_mb=o.memory_mb) as pool:
            inflight: dict[int, tuple[int, bytes, int | None, dict[str, Any], bool]] = {}
            if self.store is not None:
                for test_id, _seq, blob in self.store.pending_tests():
                    inflight[pool.submit(blob)] = (test_id, blob, None, {}, False)
                seq = self.store.next_seq()
            else:
                seq = 0
            first_seq = seq
            last_progress = last_stats = start
            while True:
                now = time.monotonic()
                out_of_budget = now >= stop_at or (o.max_tests is not None and seq - first_seq >= o.max_tests)
                while not out_of_budget and len(inflight) < 2 * o.jobs:
                    blob, idx, info = self.make_test(seq)
                    t = decode_test(blob)
                    test_id = self.store.add_test(self.run_id, seq, t["seed"], blob) if self.store else seq
                    inflight[pool.submit(blob)] = (test_id, blob, idx, info, False)
                    seq += 1
                    if o.max_tests is not None and seq - first_seq >= o.max_tests:
                        break
                if not inflight:
                    break
                res = pool.next_result(timeout=0.5)
                if res is not None:
                    test_id, blob, idx, info, rerun = inflight.pop(res.task_id)
                    if res.status == "timeout" and not rerun:
                        inflight[pool.submit(blob, timeout_s=o.timeout_s * 4)] = (test_id, blob, idx, info, True)
                    else:
                        self.handle(pool, test_id, blob, idx, info, res)
                now = time.monotonic()
                if now - last_progress >= 5.0:
                    self.progress(now - start)
                    last_progress = now
                if now - last_stats >= 5.0:
                    self.save_stats(now - start)
                    last_stats = now
            elapsed = time.monotonic() - start
            self.save_stats(elapsed)
            self.progress(elapsed)
        if self._reducer is not None:
            self._reducer.close()
        if self.store is None:
            return None
        from dlcfuzz.engine.report import write_report

        report = write_report(self.out, self.store)
        self.store.close()
        return report

    # ---- judging ----------------------------------------------------------------
    def handle(self, pool: Any, test_id: int, blob: bytes, idx: int | None, info: dict[str, Any], res: Any) -> None:
        self.counts["tests"] += 1
        t = decode_test(blob)
        verdicts: list[Verdict] = []
        items: list[str] = []
        valid = False
        obs: list[Any] = []
        if res.status == "ok":
            meta, arrays = decode_reply(res.payload)
            items = meta.get("coverage", [])
            if meta.get("invalid"):
                verdicts.append(Verdict("unknown", "invalid-test", meta["invalid"]))
            else:
                obs = meta["observations"]
                self.compiler_s += sum(ob.get("compile_s", 0.0) + (ob.get("run_s") or 0.0) for ob in obs
                                       if ob.get("run_s") != float("inf"))
                verdicts, valid = self.judge(pool, t, obs, arrays)
        elif res.status == "error":  # the worker's own handler failed: dlcfuzz's bug, counted
            verdicts.append(Verdict("unknown", "dlcfuzz-internal-error", res.error or ""))
            if self.counts["unknown"] < 3:
                self.log(f"dlcfuzz internal error (test {test_id}): {(res.error or '').splitlines()[-1:]}")
        else:
            verdicts.append(crash_verdict("tvm", res.status, res.error or res.status, res.progress, res.stderr_tail or ""))
        if valid:
            self.counts["valid"] += 1
        new = self.on_result(idx, info, blob, valid, items)
        bugs = [v for v in verdicts if v.kind == "bug"]
        if bugs:
            self.counts["bugs"] += 1
        elif any(v.kind == "unknown" for v in verdicts):
            self.counts["unknown"] += 1
        if self.store is None:
            return
        if new:
            self.store.add_coverage(test_id, new)
        for v in verdicts:
            if v.kind == "unknown":
                self.store.count_unknown(v.category)
        for v in bugs:
            self.record_finding(test_id, t, v)
        self.store.finish_test(test_id, "bug" if bugs else ("unknown" if any(v.kind == "unknown" for v in verdicts) else "pass"),
                               res.seconds, [_Obs(o) for o in obs])

    def judge(self, pool: Any, t: dict[str, Any], obs: list[dict[str, Any]], arrays: dict[str, np.ndarray]
              ) -> tuple[list[Verdict], bool]:
        by = {o["config"]: o for o in obs}
        low = by.get("lowest")
        if low is None or low["status"] != "ok":
            return [Verdict("unknown", "invalid-test", (low or {}).get("error", "lowest configuration missing"))], False
        verdicts: list[Verdict] = []
        ref = [arrays[f"lowest/{k}"] for k in range(low["n"])]
        for name in ("mutated", "default"):
            o = by.get(name)
            if o is None:
                continue
            if o["status"] != "ok":
                err = o.get("error", "")
                if any(p in err for p in EXPECTED_ERRORS):
                    verdicts.append(Verdict("unknown", "expected-error", err, [name]))
                    continue
                verdicts.append(Verdict("bug", "unexpected-error", f"{err}\n{o.get('traceback', '')}", [name],
                                        key=f"error|tvm|{name}|{error_key(err, o.get('traceback'))}"))
                continue
            got = [arrays[f"{name}/{k}"] for k in range(o["n"])]
            bad = compare(got, ref)
            if bad:
                m = bad[0]
                verdicts.append(Verdict("bug", "inconsistency", f"{name} differs from lowest at buffer {m.index}: {m.detail}",
                                        ["lowest", name], m.index, key=f"inconsistency|tvm|{name}|{m.reason}"))
            elif name == "mutated" and not PERF_EXEMPT & set(t["passes"]) and self.slow(o, low) \
                    and self.remeasured_slow(pool, t):
                verdicts.append(Verdict("bug", "slow", f"mutated {o['run_s'] * 1e6:.0f} us per call vs lowest "
                                        f"{low['run_s'] * 1e6:.0f} us (re-measured over {REMEASURE_REPEAT} calls)",
                                        ["lowest", name], key="slow|tvm|mutated"))
        if any(v.category == "inconsistency" for v in verdicts) and not self.deterministic(pool, t, ref):
            # reading memory nothing wrote, or a race: the test is not deterministic, not the compiler
            verdicts = [v for v in verdicts if v.category != "inconsistency"] + [Verdict("unknown", "nondeterministic-test")]
        return verdicts or [Verdict("pass", "pass")], True

    def deterministic(self, pool: Any, t: dict[str, Any], ref: list[np.ndarray]) -> bool:
        """The lowest configuration gives the same results when built and run again."""
        res = pool.run(encode_test(t["script"], [], t["seed"], configs=["lowest"], repeat=0))
        if res.status != "ok":
            return False
        meta, arrays = decode_reply(res.payload)
        obs = meta.get("observations", [])
        if not obs or obs[0]["status"] != "ok":
            return False
        again = [arrays[f"lowest/{k}"] for k in range(obs[0]["n"])]
        return not compare(again, ref)

    @staticmethod
    def slow(o: dict[str, Any], low: dict[str, Any]) -> bool:
        a, b = o.get("run_s") or 0.0, low.get("run_s") or 0.0
        return a > PERF_FACTOR * b and a - b > PERF_MIN_S

    def remeasured_slow(self, pool: Any, t: dict[str, Any]) -> bool:
        res = pool.run(encode_test(t["script"], t["passes"], t["seed"], configs=["lowest", "mutated"], repeat=REMEASURE_REPEAT))
        if res.status != "ok":
            return False
        by = {o["config"]: o for o in decode_reply(res.payload)[0]["observations"]}
        return all(by.get(c, {}).get("status") == "ok" for c in ("lowest", "mutated")) and self.slow(by["mutated"], by["lowest"])

    # ---- findings -------------------------------------------------------------
    def reducer_pool(self) -> Any:
        from dlcfuzz.exec.pool import WorkerPool

        if self._reducer is None:
            self._reducer = WorkerPool(HANDLER, {"coverage": []}, jobs=1, timeout_s=self.opts.timeout_s,
                                       memory_mb=self.opts.memory_mb)
        return self._reducer

    def still_fails(self, t: dict[str, Any], v: Verdict, passes: list[str]) -> bool:
        configs = ["lowest", "mutated"]
        res = self.reducer_pool().run(encode_test(t["script"], passes, t["seed"], configs=configs, repeat=0))
        if res.status != "ok":
            return v.category in ("crash", "hang", "oom") and res.status in ("crash", "timeout", "oom")
        meta, arrays = decode_reply(res.payload)
        by = {o["config"]: o for o in meta.get("observations", [])}
        low, mut = by.get("lowest"), by.get("mutated")
        if not low or not mut or low["status"] != "ok":
            return False
        if v.category == "unexpected-error":
            return mut["status"] != "ok" and normalize(mut.get("error", ""))[:120] == normalize(v.detail.splitlines()[0])[:120]
        if v.category == "inconsistency":
            return mut["status"] == "ok" and bool(compare([arrays[f"mutated/{k}"] for k in range(mut["n"])],
                                                          [arrays[f"lowest/{k}"] for k in range(low["n"])]))
        return False

    def minimal_passes(self, t: dict[str, Any], v: Verdict) -> list[str]:
        """ddmin over the pass sequence (only for findings of the mutated configuration)."""
        from dlcfuzz.reduce.ddmin import ddmin

        passes = list(t["passes"])
        if "mutated" not in v.configs or not self.opts.reduce or not passes:
            return passes
        idx = list(range(len(passes)))
        keep = ddmin(idx, lambda sub: self.still_fails(t, v, [passes[i] for i in sorted(sub)]), max_checks=24)
        return [passes[i] for i in sorted(keep)]

    def record_finding(self, test_id: int, t: dict[str, Any], v: Verdict) -> None:
        assert self.store is not None
        self.counts["findings"] += 1
        known = next((m for m in self.known_minimal.get(v.key, []) if "mutated" in v.configs and set(m) <= set(t["passes"])
                      and self.still_fails(t, v, m)), None)  # a known root cause: one check, no ddmin
        if known is not None:
            minimal = known
        else:
            minimal = self.minimal_passes(t, v) if v.category in ("inconsistency", "unexpected-error", "crash") \
                else t["passes"]
            self.known_minimal.setdefault(v.key, []).append(minimal)
        if "mutated" not in v.configs:
            minimal = []  # the default pipeline's finding: the sequence plays no part
        elif v.category == "inconsistency" and not minimal and t["passes"]:
            # it differs with no pass at all, i.e. from the very same build: nondeterminism
            self.counts["findings"] -= 1
            self.store.count_unknown("nondeterministic-test")
            return
        key = f"{v.key}|passes={','.join(sorted(set(minimal)))}" if "mutated" in v.configs else v.key
        sig = digest(key)
        existing = self.store.find_signature(sig)
        fid = self.store.add_finding(test_id=test_id, category=v.category, signature=sig, key=key, compiler="tvm",
                                     version=self.version, configs=json.dumps(v.configs), detail=v.detail[:4000],
                                     duplicate_of=existing, nodes=len(t["passes"]), reduced_nodes=len(minimal))
        if existing is not None:
            return
        self.counts["distinct"] += 1
        folder = self.out / "findings" / f"{fid:04d}-{v.category}"
        folder.mkdir(parents=True, exist_ok=True)
        title = f"dlcfuzz tzer finding {fid}: {v.category} in {self.version} ({', '.join(v.configs)})"
        script = reproducer(t["script"], minimal, t["seed"], v, title, self.version)
        (folder / "repro.py").write_text(script)
        (folder / "func.py").write_text(t["script"])
        (folder / "detail.txt").write_text(f"{title}\nsignature {sig}\nkey {key}\ntest {test_id}\n"
                                           f"passes {t['passes']}\nminimal passes {minimal}\n\n{v.detail}\n")
        self.store.update_finding(fid, reproducer=script)
        self.log(f"new finding {fid}: {v.category} ({', '.join(v.configs)}), passes {minimal}: {folder}")


class _Obs:
    """The store's observation row from a worker's observation dict."""

    def __init__(self, o: dict[str, Any]) -> None:
        self.config = o["config"]
        self.status = o["status"]
        self.error = o.get("error")
        self.compile_s = o.get("compile_s", 0.0)
        run_s = o.get("run_s")
        self.run_s = run_s if run_s is not None and run_s != float("inf") else 0.0


def reproducer(script: str, passes: list[str], seed: int, v: Verdict, title: str, version: str) -> str:
    """A standalone script (TVM's public API + NumPy): parse the PrimFunc from TVMScript, build it
    with no passes and with the pass sequence, run both on the same inputs, compare."""
    specs = []
    for p in passes:
        if p == PLANTED:
            specs.append(("planted", PLANTED, [], {}))
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
{"from dlcfuzz.lowlevel.runner import planted_pass  # the planted (deliberately wrong) pass" if planted else ""}


def build(func, passes):
    llvm = tvm.target.Target("llvm")
    mod = tirx.transform.BindTarget(llvm.with_host(llvm))(tvm.IRModule({{"main": func}}))
    for module, ctor, args, config in passes + TAIL:
        if module == "planted":
            mod = planted_pass()(mod)
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


def is_tzer_run(out: Path) -> bool:
    """Whether the campaign stored in `out` is a tzer campaign (for --resume)."""
    path = out / "store.sqlite"
    if not path.exists():
        return False
    store = Store(path, create=False)
    try:
        first = store.first_run()
    finally:
        store.close()
    return first is not None and first["strategy"] == "tzer"


def cli_fuzz(a: Any, seconds: float) -> int:
    """`dlcfuzz fuzz --strategy tzer ...` and `--resume RUN` of a tzer campaign."""
    from dlcfuzz.backends import get_backend

    if a.resume or a.compiler == "tvm":
        get_backend("tvm")  # one clear line when TVM is not installed
    if a.resume:
        opts = TzerOptions(seconds=seconds, jobs=a.jobs, out=Path(a.resume), max_tests=a.max_tests, quiet=a.quiet)
        camp = TzerCampaign(opts, resume=True)
    else:
        if a.compiler != "tvm":
            raise UsageError("--strategy tzer fuzzes TVM's TIR: use --compiler tvm")
        if a.n_max < 1:
            raise UsageError("--n-max must be at least 1")
        opts = TzerOptions(seconds=seconds, jobs=a.jobs, seed=a.seed, out=Path(a.out), max_tests=a.max_tests,
                           quiet=a.quiet, coverage=[c for c in a.coverage.split(",") if c], n_max=a.n_max,
                           reduce=not a.no_reduce)
        camp = TzerCampaign(opts)
    report = camp.run()
    print(f"report: {report}")
    return 0
