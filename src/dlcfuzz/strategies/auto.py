"""`auto`, the default strategy: one campaign interleaves random, hirgen (strict and disruptive),
oatest and metamorphic (and tzer on TVM) in one store and one report, giving time to each by its
recent yield of new coverage and new distinct findings (a bandit schedule, as AFL++/MOpt schedule
mutators).

The schedule is reproducible from the master seed, whatever the timing: tests come in blocks of
BLOCK, and the arms of block b are drawn from the yields of blocks up to b-2 only (the campaign
waits for those to be judged), with costs from a fixed table rather than measured seconds.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.strategies.base import Context, Judgement, Option, Reduction, Strategy, StrategyStore, Test

if TYPE_CHECKING:
    from dlcfuzz.backends.base import Backend
    from dlcfuzz.exec.pool import Pool, TaskResult, TaskRunner

HANDLER = "dlcfuzz.strategies.auto:make_handler"
MAGIC = b"DLCFUZZ-AUTO"
BLOCK = 32  # tests per scheduling block
# Recent yield counts most (an arm's yield falls as it saturates): yields halve every HALF_LIFE_S of the
# schedule's virtual time (COST_S per test), so "recent" means the same span on a fast and a slow compiler;
# a decay per block (0.9, before) forgot a finding within a few seconds on ONNXRuntime (~100 tests/s)
HALF_LIFE_S = 30.0
FLOOR = 0.04  # every arm keeps at least this share of the time (exploration)
# A new distinct finding is worth this many coverage-adding tests: about what a graph arm's coverage
# yields in 5 s on ONNXRuntime (0.15 per test at 100 tests/s); findings are what a campaign is for,
# and at 20 an arm that found bugs got no more time than one that only reached new shapes
FINDING_WEIGHT = 100.0
# Coverage kinds too fine to count as a yield (almost every graph has a new output shape or path)
FINE_KINDS = ("op-shape", "path3")
# Typical seconds per test, to turn a time share into test probabilities deterministically
# (measured seconds would make the schedule depend on the machine's load). Measured on ONNXRuntime: the
# wall time per test of each strategy alone (`python bench/portfolio.py --time 120 --jobs 1`, 2 cores;
# the table before this calibration gave oatest half its real cost and random twice its own).
COST_S = {"random": 0.0045, "hirgen": 0.008, "disruptive": 0.006, "oatest": 0.018, "metamorphic": 0.53, "tzer": 0.4}


@dataclass(frozen=True)
class Arm:
    name: str
    strategy: str
    params: dict[str, Any] = field(default_factory=dict)
    # a strategy made for one compiler: an arm only where the backend names it (`Backend.own_strategies`)
    own: bool = False


ARMS = (
    Arm("random", "random"),
    Arm("hirgen", "hirgen"),
    Arm("disruptive", "hirgen", {"mode": "disruptive"}),
    Arm("oatest", "oatest"),
    Arm("metamorphic", "metamorphic"),
    Arm("tzer", "tzer", {"coverage": ["ir"]}, own=True),
)


def arms_for(compiler: str, backend: Backend | None) -> list[Arm]:
    """The arms that apply to `compiler`; no disruptive arm where the backend declares that no type/shape
    rule binds its front door (`disruptive_rules() == ()`)."""
    return [a for a in ARMS if (not a.own or (backend is not None and a.strategy in backend.own_strategies))
            and not (a.name == "disruptive" and backend is not None and backend.disruptive_rules() == ())]


@dataclass
class ArmStats:
    reward: float = 1.0  # decayed yield (a prior of one success)
    tests: float = 1.0  # decayed tests
    made: int = 0
    rewarded: int = 0
    distinct: int = 0


class AutoStrategy(Strategy):
    name = "auto"
    summary = "every strategy in one campaign, scheduled by recent yield (the default)"
    handler = HANDLER
    regenerable = True
    options = (Option("ops", 10, "operators per generated graph", int),
               Option("model", "resnet18", "the zoo model the metamorphic arm mutates (see `dlcfuzz zoo`)"))

    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        from dlcfuzz.strategies.graph import check_graph_params
        from dlcfuzz.strategies.metamorphic import MetamorphicStrategy

        check_graph_params(params)
        MetamorphicStrategy.validate(params, compiler)

    def __init__(self, ctx: Context) -> None:
        from dlcfuzz.strategies import get_strategy

        super().__init__(ctx)
        self.arms = arms_for(ctx.compiler, ctx.backend)
        self.subs: list[Strategy] = []
        for arm in self.arms:
            cls = get_strategy(arm.strategy)
            params = {o.name: o.default for o in cls.options}
            params.update({k: v for k, v in ctx.params.items() if k in params}, **arm.params)
            sub_ctx = dataclasses.replace(ctx, params=params, reducer_pool=self.reducer_for(len(self.subs)),
                                          mine=self.mine_for(len(self.subs)), unwrap=lambda b: b[len(MAGIC) + 1:])
            self.subs.append(cls(sub_ctx))
        self.stats = [ArmStats() for _ in self.arms]
        self.folded = -1  # the last block whose yields are in the stats
        self.new_distinct: dict[int, int] = {}  # test id -> distinct findings it made
        self.judged: dict[int, int] = {}  # block -> tests judged
        self.block_rewards: dict[int, list[tuple[int, float]]] = {}  # block -> (arm, reward) of its tests
        self.schedule: dict[int, int] = {}  # seq -> arm index, of the blocks not yet folded (the store has all)
        self.pruned_below = 0  # the schedule's entries below this seq were dropped (the store keeps them)
        self._shares: list[float] = []

    # ---- plumbing ------------------------------------------------------
    def handler_init(self) -> dict[str, Any]:
        return {**super().handler_init(),
                "arms": [[sub.handler, sub.handler_init()] for sub in self.subs]}

    def deadline_s(self) -> float:
        return min(sub.deadline_s() for sub in self.subs)

    def reducer_for(self, i: int) -> Callable[[], Any]:
        """Arm i's reducer: the campaign's one reducer pool (its workers run this strategy's handler,
        which routes by tag), so reducing for several arms costs one more worker, not one per arm."""
        return lambda: ArmPool(self.ctx.reducer_pool(), bytes([i]), self.subs[i].deadline_s())

    def mine_for(self, i: int) -> Callable[[int], bool]:
        return lambda seq: self.arm_of(seq) == i

    def arm_of(self, seq: int) -> int | None:
        if seq not in self.schedule:
            arm = self.ctx.store.arm_of(seq)
            if arm is None:
                return None
            self.schedule[seq] = arm
        return self.schedule[seq]

    def start(self, pool: Pool, resumed: bool) -> None:
        for sub in self.subs:
            sub.start(pool, resumed)
        if resumed:  # the yields so far, from the store (as they were when the run was killed)
            for seq, arm, reward in self.ctx.store.schedule_rows():
                self.schedule[seq] = arm
                if reward is not None:
                    self.account(seq, arm, reward)

    def close(self) -> None:
        for sub in self.subs:
            sub.close()

    # ---- the schedule --------------------------------------------------
    def ready(self, seq: int) -> bool:
        """Block b is drawn from blocks up to b-2: those must be judged first (and an arm's own wait holds)."""
        b = seq // BLOCK
        return (b < 2 or self.judged.get(b - 2, 0) >= BLOCK) and all(sub.ready(seq) for sub in self.subs)

    def shares(self) -> list[float]:
        rates = [s.reward / s.tests / COST_S.get(a.name, 0.05) for a, s in zip(self.arms, self.stats)]
        total = sum(rates)
        shares = [max(FLOOR, r / total) for r in rates]
        return [x / sum(shares) for x in shares]

    def choose(self, seq: int, seed: int) -> int:
        b = seq // BLOCK
        if self.folded < b - 2 or not self._shares:
            while self.folded < b - 2:  # idempotent and in order: a resumed run folds as the whole run did
                self.folded += 1
                self.fold(self.folded)
            self.prune((self.folded + 1) * BLOCK)
            self._shares = self.shares()
        # time shares -> test probabilities (a slow arm gets fewer tests for the same time)
        p = np.array([s / COST_S.get(a.name, 0.05) for a, s in zip(self.arms, self._shares)])
        return int(np.random.default_rng([seed, 0xA070]).choice(len(self.arms), p=p / p.sum()))

    def fold(self, b: int) -> None:
        """Decay every arm's yield by block b's virtual time and add block b's rewards."""
        rewards = self.block_rewards.pop(b, [])
        span = sum(COST_S.get(self.arms[arm].name, 0.05) for arm, _ in rewards)
        decay = 0.5 ** (span / HALF_LIFE_S)
        for s in self.stats:
            s.reward *= decay
            s.tests *= decay
        for arm, reward in rewards:
            self.stats[arm].reward += reward
            self.stats[arm].tests += 1

    def prune(self, below: int) -> None:
        """Forget the arms and judged counts of folded blocks: a campaign of days must not keep one
        entry per test in memory (arm_of and make_test read a dropped arm back from the store)."""
        for seq in range(self.pruned_below, below):
            self.schedule.pop(seq, None)
        for b in range(self.pruned_below // BLOCK, below // BLOCK - 1):  # `ready` still reads the last one
            self.judged.pop(b, None)
        self.pruned_below = max(self.pruned_below, below)

    def account(self, seq: int, arm: int, reward: float) -> None:
        b = seq // BLOCK
        self.judged[b] = self.judged.get(b, 0) + 1
        self.block_rewards.setdefault(b, []).append((arm, reward))
        self.stats[arm].rewarded += reward > 0

    # ---- tests ---------------------------------------------------------
    def make_test(self, seq: int, seed: int) -> Test:
        # known when a compacted test is regenerated; a new test (above the pruned blocks) is never in
        # the store, so it costs no query
        arm = self.schedule.get(seq) if seq >= self.pruned_below else self.arm_of(seq)
        if arm is None:
            arm = self.choose(seq, seed)
            self.schedule[seq] = arm
            self.ctx.store.set_arm(seq, arm)
        sub = self.subs[arm].make_test(seq, seed)
        self.stats[arm].made += 1
        coverage = sub.coverage
        if not coverage and hasattr(sub.payload, "graph"):  # every graph arm is credited on one coverage scale
            from dlcfuzz.gen.coverage import graph_items

            coverage = sorted(graph_items(sub.payload.graph))
        return Test(seq, seed, MAGIC + bytes([arm]) + sub.blob, (arm, sub), coverage,
                    deadline_s=self.subs[arm].deadline_s())

    def decode(self, blob: bytes) -> tuple[int, Test]:
        arm = blob[len(MAGIC)]
        inner = blob[len(MAGIC) + 1:]
        return arm, Test(0, 0, inner, self.subs[arm].decode(inner))

    def inner(self, test: Test) -> tuple[int, Strategy, Test]:
        arm, sub_test = test.payload
        sub_test.seq, sub_test.seed, sub_test.test_id = test.seq, test.seed, test.test_id
        return arm, self.subs[arm], sub_test

    def judge(self, test: Test, res: TaskResult) -> Judgement:
        arm, sub, sub_test = self.inner(test)
        j = sub.judge(sub_test, res)
        if j.blob is not None:
            j.blob = MAGIC + bytes([arm]) + j.blob
        return j

    def learn(self, test: Test, j: Judgement, new: list[str]) -> None:
        arm, sub, sub_test = self.inner(test)
        from dlcfuzz.gen.coverage import kind

        scarce = any(kind(i) not in FINE_KINDS for i in [*test.added, *new])
        reward = (1.0 if scarce else 0.0) + FINDING_WEIGHT * self.new_distinct.pop(test.test_id, 0)
        self.account(test.seq, arm, reward)  # first: the schedule must go on whatever the arm does
        self.ctx.store.set_reward(test.seq, reward)
        sub.learn(sub_test, j, new)

    def failed(self, seq: int) -> None:
        """An internal error made or judged test `seq`: no yield, but its block is complete."""
        arm = self.arm_of(seq)
        if arm is not None:
            self.account(seq, arm, 0.0)
            self.ctx.store.set_reward(seq, 0.0)
            self.subs[arm].failed(seq)

    def restore(self, seq: int) -> None:
        arm = self.arm_of(seq)
        if arm is None:
            raise ValueError(f"test {seq} has no recorded arm")
        self.subs[arm].restore(seq)

    def keeps_blob(self, test: Test) -> bool:
        _, sub, sub_test = self.inner(test)
        return sub.keeps_blob(sub_test)

    def light_blob(self, test: Test) -> bytes | None:
        arm, sub, sub_test = self.inner(test)
        light = sub.light_blob(sub_test)
        return None if light is None else MAGIC + bytes([arm]) + light

    def is_light(self, blob: bytes) -> bool:
        return self.subs[blob[len(MAGIC)]].is_light(blob[len(MAGIC) + 1:])

    def inflate(self, blob: bytes) -> bytes:
        return blob[:len(MAGIC) + 1] + self.subs[blob[len(MAGIC)]].inflate(blob[len(MAGIC) + 1:])

    def fingerprint(self, test: Test) -> bytes:
        arm, sub, sub_test = self.inner(test)
        return bytes([arm]) + sub.fingerprint(sub_test)

    def size(self, test: Test) -> int:
        _, sub, sub_test = self.inner(test)
        return sub.size(sub_test)

    # ---- findings ------------------------------------------------------
    def early_key(self, test: Test, v: Verdict) -> str | None:
        _, sub, sub_test = self.inner(test)
        return sub.early_key(sub_test, v)

    def reduce(self, test: Test, v: Verdict) -> Reduction:
        _, sub, sub_test = self.inner(test)
        return sub.reduce(sub_test, v)

    def unreduced(self, test: Test, v: Verdict) -> Reduction:
        _, sub, sub_test = self.inner(test)
        return sub.unreduced(sub_test, v)

    def found(self, test: Test, distinct: bool) -> None:
        if distinct:
            arm, _, _ = self.inner(test)
            self.stats[arm].distinct += 1
            self.new_distinct[test.test_id] = self.new_distinct.get(test.test_id, 0) + 1

    # ---- output --------------------------------------------------------
    def progress_fields(self) -> str:
        shares = self._shares or self.shares()
        return "arms " + " ".join(f"{a.name}:{100 * s:.0f}%" for a, s in zip(self.arms, shares))

    @classmethod
    def report_section(cls, store: StrategyStore) -> str:
        rows = store.arm_totals()
        if not rows:
            return ""
        names = dict(enumerate(a.name for a in ARMS))  # arms only ever drop off the end (tzer)
        body = "".join(f"<tr><td>{html.escape(names.get(arm, str(arm)))}</td><td>{n}</td><td>{rewarded}</td>"
                       f"<td>{reward:.0f}</td></tr>" for arm, n, rewarded, reward in rows)
        return ("<h2>Strategies (auto)</h2><p>Tests per strategy, tests that added coverage or a distinct finding, "
                "and their yield.</p><table><tr><th>strategy</th><th>tests</th><th>rewarded</th><th>yield</th></tr>"
                f"{body}</table>")


@dataclass
class ArmPool:
    """A pool as one arm sees it: its payloads go out tagged with the arm, under the arm's deadline."""

    pool: TaskRunner
    tag: bytes
    deadline_s: float

    def run(self, payload: bytes, timeout_s: float | None = None) -> TaskResult:
        return self.pool.run(MAGIC + self.tag + payload, timeout_s or self.deadline_s)


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Worker side: route each test to its arm's handler (built on first use: an arm's compiler
    imports happen only if the schedule gives it a test). Untagged payloads (a capability probe)
    go to the differential handler."""
    import importlib

    arms: list[list[Any]] = init["arms"]
    built: dict[int, Callable[[bytes], bytes]] = {}

    def handler(i: int) -> Callable[[bytes], bytes]:
        if i not in built:
            name, arm_init = arms[i] if i >= 0 else ("dlcfuzz.exec.worker:make_handler", init)
            module, factory = name.split(":")
            built[i] = getattr(importlib.import_module(module), factory)(arm_init)
        return built[i]

    def handle(payload: bytes) -> bytes:
        if payload.startswith(MAGIC):
            return handler(payload[len(MAGIC)])(payload[len(MAGIC) + 1:])
        return handler(-1)(payload)

    return handle

