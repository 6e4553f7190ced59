"""The campaign engine, blind to strategies: make -> store (before running) -> sandboxed run ->
strategy's oracle -> dedup -> reduce -> finding folder; budget, re-runs, progress, resume.

An exception raised by dlcfuzz's own code while making, judging or reducing one test is an
internal error of that test, never of the campaign: it is stored with the test's seed and
traceback, counted, replayable (`dlcfuzz replay RUN --test N`), and the campaign goes on.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlcfuzz.backends import DEFAULT_COMPILER
from dlcfuzz.engine.store import Store
from dlcfuzz.errors import InternalError, UsageError
from dlcfuzz.ir.blob import blob_digest
from dlcfuzz.oracle.policy import routine_unknown, test_seed
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.strategies import Context, Strategy, Test, get_strategy

if TYPE_CHECKING:
    from dlcfuzz.backends.base import Backend
    from dlcfuzz.engine.known import Register
    from dlcfuzz.exec.pool import Pool, TaskResult
    from dlcfuzz.oracle.testcase import Config

HANG_FACTOR = 4.0  # a timeout is re-run with this many times the deadline before it is called a hang
REDUCER_IDLE_S = 60.0  # the reducer's worker is closed when no reduction used it for this long
CORPUS_MAX = 500  # tests that added coverage whose blobs are kept (the most coverage first), as AFL++ keeps a queue
IDENTITY = ("compiler", "strategy", "seed", "configs", "params", "keep_tests", "input_sets")  # restored on --resume; the budget may change


@dataclass
class CampaignOptions:
    compiler: str = DEFAULT_COMPILER
    strategy: str = "auto"
    seconds: float = 60.0
    jobs: int = 2
    seed: int = 0
    out: Path = Path("runs/default")
    max_tests: int | None = None  # the campaign stops making tests at this many in all (resumed runs included)
    memory_mb: int = 4096
    timeout_s: float | None = None
    configs: list[str] = field(default_factory=list)
    reduce: bool = True
    reduce_budget_s: float | None = None  # one finding's reduction seconds (None: the compiler's own)
    quiet: bool = False
    keep_tests: bool = False  # keep every test's blob (no compaction of routine tests)
    params: dict[str, Any] = field(default_factory=dict)  # the strategy's own options
    cluster: str | None = None  # Ray cluster address ("auto" or ADDRESS): workers are actors on its nodes
    input_sets: int | None = None  # input sets each compiled test runs (None: the compiler's `input_sets`)

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["out"] = str(self.out)
        return d


def campaign_options(**kw: Any) -> CampaignOptions:
    """CampaignOptions from keyword arguments; those that are not engine fields are the strategy's."""
    names = {f.name for f in dataclasses.fields(CampaignOptions)}
    params = dict(kw.pop("params", {}))
    params.update({k: kw.pop(k) for k in list(kw) if k not in names})
    return CampaignOptions(**kw, params=params)


class InternalErrorCount:
    """The campaign's internal errors: stored, counted, the first few shown."""

    def __init__(self, store: Store, log: Callable[[str], None]) -> None:
        self.store, self.log, self.count = store, log, 0

    def add(self, test_id: int | None, seq: int, seed: int, phase: str, error: str, tb: str) -> None:
        self.count += 1
        self.store.add_internal_error(test_id, seq, seed, phase, error, tb)
        if self.count <= 3:
            self.log(f"\ndlcfuzz internal error ({phase}, test seq {seq}): {error.splitlines()[-1][:200] if error else ''}")


class Campaign:
    def __init__(self, opts: CampaignOptions, resume: bool = False, record_run: bool = True) -> None:
        self.opts = opts
        self.out = Path(opts.out)
        store_path = self.out / "store.sqlite"
        if resume:
            self.store = self._open_resumed(store_path, record_run)
        else:
            if store_path.exists():
                raise UsageError(f"{self.out} already holds a campaign: use --resume {self.out} or another --out")
            self.strategy_cls = get_strategy(opts.strategy)
            opts.params = self._checked_params(self.strategy_cls, opts.params)
        cls = self.strategy_cls
        if opts.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if opts.max_tests is not None and opts.max_tests < 1:
            raise UsageError("--max-tests must be at least 1")
        if opts.input_sets is not None and opts.input_sets < 1:
            raise UsageError("--input-sets must be at least 1")
        if cls.compilers is not None and opts.compiler not in cls.compilers:
            raise UsageError(f"--strategy {cls.name} needs --compiler {' or '.join(cls.compilers)}")
        backend: Backend | None = None
        if cls.needs_backend:
            from dlcfuzz.backends import get_backend

            backend = get_backend(opts.compiler)  # bad input is refused before anything is written
        if not resume:
            cls.validate(opts.params, opts.compiler)
            try:
                self.out.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise UsageError(f"cannot create {self.out}: {e.strerror}") from None
            self.store = Store(store_path)
        version = backend.version() if backend is not None else opts.compiler
        configs = self._configs(backend)
        from dlcfuzz.gen.coverage import Coverage

        self.ctx = Context(compiler=opts.compiler, seed=opts.seed, params=opts.params, configs=configs,
                           configs_picked=bool(opts.configs), backend=backend, version=version, store=self.store,
                           coverage=Coverage(self.store.coverage()), out=self.out, reduce=opts.reduce,
                           seconds=opts.seconds, max_tests=opts.max_tests, reducer_pool=self.reducer_pool,
                           fresh_reducer=self.close_reducer,
                           log=self.log, reduce_budget_s=opts.reduce_budget_s,
                           input_sets=opts.input_sets or (backend.input_sets if backend is not None else 1))
        self.strategy: Strategy = cls(self.ctx)
        self.resumed = resume
        self.run_id = self.store.new_run(opts.seed, opts.compiler, version, opts.strategy, opts.to_json()) if record_run else 0
        # executions: the runs of a compiled program on one input set that were judged
        self.counts = {"tests": 0, "valid": 0, "bugs": 0, "unknown": 0, "findings": 0, "distinct": 0, "known": 0,
                       "suspected": 0, "executions": 0}
        self._register: Register | None = None
        self.compiler_s = 0.0
        self.internal = InternalErrorCount(self.store, self.log)
        self.corpus = self.store.corpus()
        self._reducer: Pool | None = None
        self._reducer_used = 0.0  # when the reducer pool was last asked for (monotonic)
        self.reducer_idle_s = REDUCER_IDLE_S

    def _open_resumed(self, store_path: Path, record_run: bool) -> Store:
        if not store_path.exists():
            raise UsageError(f"--resume: no campaign store at {store_path}")
        store = Store(store_path, create=False)
        first = store.first_run()
        if first is None:
            raise UsageError(f"--resume: {store_path} holds no campaign")
        if store.shards() and record_run:
            raise UsageError(f"--resume: {store_path} is a merged campaign (dlcfuzz merge), for reading: resume its shards")
        saved = first["args"]
        for k in IDENTITY:  # the campaign's identity comes from the store
            if k in saved:
                setattr(self.opts, k, saved[k])
        if "params" not in saved:  # a store of an older dlcfuzz: strategy options were top-level
            self.opts.params = {k: v for k, v in saved.items() if k not in {f.name for f in dataclasses.fields(CampaignOptions)}}
        self.opts.strategy = first["strategy"] or self.opts.strategy
        self.strategy_cls = get_strategy(self.opts.strategy)
        self.opts.params = {o.name: self.opts.params.get(o.name, o.default) for o in self.strategy_cls.options}
        return store

    @staticmethod
    def _checked_params(cls: type[Strategy], params: dict[str, Any]) -> dict[str, Any]:
        """The strategy's options with their defaults; an option of another strategy is refused."""
        known = {o.name for o in cls.options}
        foreign = sorted(k for k in params if k not in known)
        if foreign:
            flags = ", ".join("--" + k.replace("_", "-") for k in foreign)
            raise UsageError(f"{flags} does not apply to --strategy {cls.name}")
        return {o.name: params.get(o.name, o.default) for o in cls.options}

    def _configs(self, backend: Backend | None) -> list[Config]:
        if backend is None:
            return []
        every = backend.configs()
        if self.opts.configs:
            unknown = [c for c in self.opts.configs if c not in every]
            if unknown:
                raise UsageError(f"unknown configuration(s) {unknown} for {self.opts.compiler} (have {', '.join(every)})")
            return [every[c] for c in self.opts.configs]
        return list(backend.default_pair())

    # ---- output --------------------------------------------------------
    def log(self, msg: str) -> None:
        if not self.opts.quiet:
            print(msg, file=sys.stderr, flush=True)

    def progress(self, elapsed: float, final: bool = False) -> None:
        if self.opts.quiet:
            return
        c = self.counts
        rate = c["tests"] / elapsed if elapsed > 0 else 0.0
        valid = 100.0 * c["valid"] / c["tests"] if c["tests"] else 0.0
        extra = self.strategy.progress_fields()
        line = (f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}] tests {c['tests']} ({rate:.1f}/s) valid {valid:.0f}% "
                f"executions {c['executions']} "
                f"findings {c['findings']} (distinct {c['distinct']}, known {c['known']}"
                f"{', suspected reference errors ' + str(c['suspected']) if c['suspected'] else ''}) unknown {c['unknown']} coverage "
                f"{len(self.ctx.coverage)}{' ' + extra if extra else ''} internal errors {self.internal.count}")
        tty = sys.stderr.isatty()
        print(("\r" if tty else "") + line, end="" if tty and not final else "\n", file=sys.stderr, flush=True)

    def save_stats(self, elapsed: float) -> None:
        c, s = self.counts, self.strategy.counts
        self.store.add_stats(self.run_id, elapsed=elapsed, tests=c["tests"], valid=c["valid"], bugs=c["bugs"],
                             unknown=c["unknown"], findings=c["findings"], distinct_findings=c["distinct"],
                             compiler_s=self.compiler_s, executions=c["executions"])
        self.store.add_coverage_point(self.run_id, elapsed, c["tests"], len(self.ctx.coverage), s.get("valuable", 0),
                                      s.get("mutants", 0), s.get("well_formed", 0))

    # ---- main loop -----------------------------------------------------
    def run(self) -> Path:
        from dlcfuzz.exec.cluster import make_pool
        from dlcfuzz.exec.pool import AHEAD

        o = self.opts
        deadline = o.timeout_s or self.strategy.deadline_s()
        reducing_before = self.ctx.reduce_s[0]
        with make_pool(o.cluster, self.strategy.handler, self.strategy.handler_init(), jobs=o.jobs, timeout_s=deadline,
                       memory_mb=o.memory_mb) as pool:
            self.strategy.start(pool, self.resumed)
            start = time.monotonic()  # a first campaign's capability probe (minutes on TVM) is no testing time
            inflight: dict[int, tuple[Test, bool]] = {}
            for test_id, seq, seed, blob in self.store.pending_tests():  # a killed campaign's in-flight tests
                test = Test(seq, seed, blob, self.strategy.decode(blob), test_id=test_id)
                inflight[pool.submit(blob)] = (test, False)
            seq = self.store.next_seq()
            last_progress = last_stats = start
            while True:
                # --time is testing time: each finding's reduction runs on a budget of its own on top
                testing_s = time.monotonic() - start - (self.ctx.reduce_s[0] - reducing_before)
                budget = testing_s < o.seconds and (o.max_tests is None or seq < o.max_tests)
                # a test running in each worker and AHEAD more in its pipe (exec/pool.py)
                while (budget and len(inflight) < (1 + AHEAD) * o.jobs and (o.max_tests is None or seq < o.max_tests)
                       and self.strategy.ready(seq)):
                    test = self.make(seq)
                    seq += 1
                    if test is not None:
                        inflight[pool.submit(test.blob, timeout_s=test.deadline_s)] = (test, False)
                if not inflight:
                    if budget:
                        continue  # every test of this round was an internal error: make more
                    break
                res = pool.next_result(timeout=0.5)
                if res is not None:
                    test, rerun = inflight.pop(res.task_id)
                    if res.status == "timeout" and not rerun:
                        longer = (test.deadline_s or deadline) * HANG_FACTOR
                        inflight[pool.submit(test.blob, timeout_s=longer)] = (test, True)
                    else:
                        self.finish(test, res)
                now = time.monotonic()
                self.release_idle_reducer(now)
                if now - last_progress >= 1.0:
                    self.progress(now - start)
                    last_progress = now
                if now - last_stats >= 5.0:
                    self.save_stats(now - start)
                    last_stats = now
            elapsed = time.monotonic() - start
            self.save_stats(elapsed)
            self.progress(elapsed, final=True)
        self.strategy.close()
        self.close_reducer()
        from dlcfuzz.engine.report import write_report

        report = write_report(self.out, self.store)
        self.store.close()
        return report

    def make(self, seq: int) -> Test | None:
        """The test of number `seq`, stored before it runs; None when making it raised (an internal
        error, stored with its seed and traceback: the test number stays taken)."""
        seed = test_seed(self.opts.seed, seq)
        try:
            test = self.strategy.make_test(seq, seed)
        except Exception as e:
            test_id = self.store.add_test(self.run_id, seq, seed, b"", status="done", verdict="internal-error")
            self.internal.add(test_id, seq, seed, "make", f"{type(e).__name__}: {e}", traceback.format_exc())
            self.counts["tests"] += 1
            self.strategy.failed(seq)
            return None
        new = self.ctx.coverage.add(test.coverage)
        test.gain, test.added = len(new), new
        test.test_id = self.store.add_test(self.run_id, seq, test.seed, test.blob, new)
        return test

    def finish(self, test: Test, res: TaskResult) -> None:
        """Judge one result, record its findings (before the test is marked done: a kill between
        the two re-runs the test and never loses a finding) and feed coverage back."""
        self.counts["tests"] += 1
        try:
            j = self.strategy.judge(test, res)
        except Exception as e:
            self.internal.add(test.test_id, test.seq, test.seed, "judge", f"{type(e).__name__}: {e}", traceback.format_exc())
            self.store.finish_test(test.test_id, "internal-error", res.seconds, [])
            self.strategy.failed(test.seq)
            return
        if res.status == "error":  # dlcfuzz's own code failed inside the worker (e.g. our lowering)
            self.internal.add(test.test_id, test.seq, test.seed, "worker", (res.error or "").strip().splitlines()[-1:][0]
                              if res.error else "", res.error or "")
        if j.blob is not None:  # the worker re-sampled the inputs: the store keeps what really ran
            test.blob = j.blob
            self.store.update_blob(test.test_id, j.blob)
        self.compiler_s += j.compiler_s
        self.counts["valid"] += j.valid
        self.counts["executions"] += j.executions
        bugs = [v for v in j.verdicts if v.kind == "bug"]
        unknowns = [v for v in j.verdicts if v.kind == "unknown"]
        for v in unknowns:
            self.store.count_unknown(v.category)
        self.counts["bugs"] += bool(bugs)
        self.counts["unknown"] += bool(unknowns) and not bugs
        new = self.ctx.coverage.add(j.coverage) if j.coverage else []
        if new:
            self.store.add_coverage(test.test_id, new)
        if j.applied:
            self.store.add_applied(test.test_id, j.applied)
        test.gain += len(new)
        for v in bugs:  # findings before the test is marked done (and before the strategy learns from it)
            self.record_finding(test, v)
        try:
            self.strategy.learn(test, j, new)
        except Exception as e:
            self.internal.add(test.test_id, test.seq, test.seed, "learn", f"{type(e).__name__}: {e}", traceback.format_exc())
        verdict = "bug" if bugs else "internal-error" if res.status == "error" else "unknown" if unknowns else "pass"
        routine = verdict == "pass" or (verdict == "unknown" and all(routine_unknown(v.category) for v in unknowns))
        shrinks = routine and not self.opts.keep_tests  # the store may keep less than the whole test
        if shrinks and not self.strategy.keeps_blob(test) and not self.keep_in_corpus(test):
            self.store.compact(test.test_id, verdict, res.seconds, blob_digest(self.strategy.fingerprint(test)))
        else:
            self.store.finish_test(test.test_id, verdict, res.seconds, j.observations)
            # what rebuilds it from the store, instead of the whole test (not when the worker changed
            # what ran: the strategy rebuilds what it made)
            light = self.strategy.light_blob(test) if shrinks and j.blob is None else None
            if light is not None:
                self.store.update_blob(test.test_id, light)

    def keep_in_corpus(self, test: Test) -> bool:
        """Whether a routine test joins the bounded corpus of tests that added coverage (its blob kept);
        when full, the entry that added least leaves it and is compacted."""
        if test.gain == 0:
            return False
        if len(self.corpus) >= CORPUS_MAX:
            weakest = min(self.corpus, key=lambda t: (self.corpus[t], t))
            if self.corpus[weakest] >= test.gain:
                return False
            del self.corpus[weakest]
            self.store.set_corpus(weakest, None)
            self.compact_stored(weakest)
        self.corpus[test.test_id] = test.gain
        self.store.set_corpus(test.test_id, test.gain)
        return True

    def compact_stored(self, test_id: int) -> None:
        verdict, seconds = self.store.test_verdict(test_id)
        blob = self.store.test_blob(test_id)
        old = Test(0, 0, blob, self.strategy.decode(blob), test_id=test_id) if blob else None
        if verdict in ("pass", "unknown") and old is not None and not self.strategy.keeps_blob(old):
            self.store.compact(test_id, verdict, seconds, blob_digest(self.strategy.fingerprint(old)))

    # ---- findings ------------------------------------------------------
    def reducer_pool(self) -> Pool:
        from dlcfuzz.exec.cluster import make_pool

        self._reducer_used = time.monotonic()
        if self._reducer is None:  # on a cluster: one more actor, taking no CPU (the campaign waits for it)
            self._reducer = make_pool(self.opts.cluster, self.strategy.handler, self.strategy.handler_init(), jobs=1,
                                      timeout_s=self.opts.timeout_s or self.strategy.deadline_s(),
                                      memory_mb=self.opts.memory_mb, cpus_per_actor=0)
        return self._reducer

    def release_idle_reducer(self, now: float) -> None:
        """Close the reducer pool once no reduction has used it for `reducer_idle_s`: its worker (the
        compiler, a zoo model) would otherwise stay for the rest of the campaign, unused between
        findings minutes apart. Findings in a burst share one worker; the next reduction after a
        pause starts one (on its own budget)."""
        if now - self._reducer_used >= self.reducer_idle_s:
            self.close_reducer()

    def close_reducer(self) -> None:
        """Close the reducer pool, if one runs: the next `reducer_pool()` starts a fresh worker."""
        if self._reducer is not None:
            self._reducer.close()
            self._reducer = None

    def record_finding(self, test: Test, v: Verdict) -> None:
        from dlcfuzz.engine.findings import record_finding

        record_finding(self, test, v)

    def register(self) -> Register:
        """The known upstream bugs (the compilers' registers, plus DLCFUZZ_KNOWN_BUGS files)."""
        from dlcfuzz.engine.known import Register

        if self._register is None:
            self._register = Register()
        return self._register

    def finding_counts(self, distinct: bool) -> None:
        self.counts["findings"] += 1
        self.counts["distinct"] += distinct



def replay(run: Path, test_id: int, timeout_s: float | None = None) -> list[Verdict]:
    """Re-run a stored test in the sandbox and judge it as the campaign did. A test that was an
    internal error raises it again: making it (the strategy rebuilt from the store), in the worker,
    or judging it."""
    from dlcfuzz.exec.cluster import make_pool

    camp = Campaign(CampaignOptions(out=run, quiet=True, timeout_s=timeout_s), resume=True, record_run=False)
    row = camp.store.test_row(test_id)
    errors = camp.store.internal_errors(test_id)
    shard = next((sh for sh in camp.store.shards() if sh["first_test"] <= test_id <= sh["last_test"]), None)
    stored = camp.store.test_blob(test_id)
    strategy = camp.strategy
    if shard is not None and (stored is None or strategy.is_light(stored) or (errors and errors[0]["phase"] == "make")):
        # regenerated from its own shard's master seed and strategy state: replayed there
        raise UsageError(f"test {test_id} of this merged campaign is test {test_id - shard['first_test'] + 1} of its "
                         f"shard {shard['name']}: replay it there")
    with make_pool(None, strategy.handler, strategy.handler_init(), jobs=1,
                   timeout_s=timeout_s or strategy.deadline_s(), memory_mb=camp.opts.memory_mb) as pool:
        camp.ctx.reducer_pool = lambda: pool
        if errors and errors[0]["phase"] == "make":
            strategy.start(pool, True)
            strategy.restore(row["seq"]) if strategy.regenerable else None
            try:
                strategy.make_test(row["seq"], row["seed"])
            except Exception as e:  # the internal error again: its traceback, as dlcfuzz's own bug
                raise InternalError(f"test {test_id} ({row['seq']}): making it raised again:\n"
                                    f"{traceback.format_exc()}") from e
            raise InternalError(f"test {test_id}: making it raised before, not now:\n{errors[0]['traceback']}")
        blob = stored
        if blob is None:  # compacted: regenerated from the master seed and checked against its digest
            strategy.start(pool, True)
            strategy.restore(row["seq"])
            test = strategy.make_test(row["seq"], test_seed(camp.opts.seed, row["seq"]))
            if blob_digest(strategy.fingerprint(test)) != row["digest"]:
                raise InternalError(f"test {test_id}: the regenerated test differs from the one that ran")
            blob = test.blob
        else:
            blob = strategy.inflate(blob)  # a light blob rebuilt from the store
            test = Test(row["seq"], row["seed"], blob, strategy.decode(blob), test_id=test_id)
        res = pool.run(blob)
        if res.status == "error":
            raise InternalError(f"test {test_id}: dlcfuzz's worker code raised:\n{res.error}")
        try:
            return strategy.judge(test, res).verdicts
        except Exception as e:
            raise InternalError(f"test {test_id}: judging it raised:\n{traceback.format_exc()}") from e
