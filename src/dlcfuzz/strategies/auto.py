"""`auto`, the default strategy: one campaign interleaves random, hirgen (strict and disruptive),
oatest and metamorphic (and tzer on TVM) in one store and one report, giving time to each by its
recent yield of new coverage, new root causes and optimizations fired for the first time (a bandit
schedule, as AFL++/MOpt schedule mutators).

The schedule is reproducible from the master seed, whatever the timing: tests come in blocks of
BLOCK, and the arms of block b are drawn from the yields of blocks up to b-2 only (the campaign
waits for those to be judged), with costs from a fixed table rather than measured seconds. Beside
the floor of the time, each arm has a floor of the tests, by position (`floor_arm`): one test of
every block, or of every few blocks for an arm dearer than FLOOR_TEST_COST_S, so that an arm 100
times dearer than `random` (metamorphic) still runs (a time share of 4% gave it one test in three
minutes) and does not take most of the time either (one test of every block: 70%).

Yield counts root causes, not distinct findings: on an old release `random` finds dozens of distinct
findings per kernel bug (one `noop_with_empty_axes` bug gave 20 clusters of signatures), and a
reward per signature gave it nearly all the time. The engine clusters findings into root causes
after the campaign (engine/clusters.py); when the strategy learns from a test, its finding is
reduced (its stored key is known) but not clustered, so `root_cause` is a proxy of the cluster key
from what a finding row holds: the category; for an error-like finding the minimal
optimization/pass set and the message class (`message_class`, the clusters' own normalization); for
a numeric finding the optimization set (or, for a wrong result, none: every configuration is
wrong), the mismatch reason and the reduced graph's operators. It is coarser than the clusters only
in leaving out the reduced graph's dtype class (in reduced.json, written after) and finer in not
merging an operator superset into its subset. Only the first test in the campaign to hold a proxy,
whichever arm made it, is rewarded. Which test is first is decided when its block is folded, in
test order, from each test's proxies (every finding's, duplicates too: which of two tests in flight
at once records a signature first is timing), and the same for first-fired optimizations; so the
yields stay a function of the seed and the tests' results, and a resumed campaign reads them back
from the store (the first test of each proxy, from `findings`; of each optimization, from
`oatest_triggers`; the `schedule` table's reward is the coverage yield alone).

A finding the known-bugs register matches counts as a root cause too: the register is the engine's (a
floor above), matched after the finding is written, and on an old release most root causes are known
ones, so leaving them out would leave next to no finding yield to schedule by.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import DedupKey, clustered_by_ops, message_key_tags
from dlcfuzz.oracle.signature import message_class
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.strategies.base import Context, Judgement, Option, Reduction, Strategy, StrategyStore, Test
from dlcfuzz.strategies.graph import REGIONS, SIZES, VALUES

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
# An arm's floor is one test of every block (3% of the tests) while that costs at most this (virtual)
# time; a dearer arm's floor test comes every COST_S / FLOOR_TEST_COST_S blocks (ONNXRuntime:
# metamorphic one test in 27 blocks, about 9% of the time; oatest, at 0.018 s, every block)
FLOOR_TEST_COST_S = 0.02
# A new root cause is worth this many coverage-adding tests: about what a graph arm's coverage yields
# in 10 s on ONNXRuntime (0.15 per test at 100 tests/s). It was 100 per distinct finding; a 30-minute
# campaign has about a fifth as many root causes as distinct findings (40 and 213), so twice the weight
# still gives findings less of the yield than before, and none to a new signature of a root cause seen before
ROOT_CAUSE_WEIGHT = 200.0
# An optimization that fires for the first time in the campaign (OATest's trigger report) shows the arm
# reached compiler code no earlier test reached, where its bugs are: an eighth of a root cause. One
# compiler has a few dozen targets (37 on ONNXRuntime), so all of them together are worth a few root
# causes, early in the campaign, and never again
FIRST_FIRED_WEIGHT = 25.0
# Coverage kinds too fine to count as a yield (almost every graph has a new output shape or path)
FINE_KINDS = ("op-shape", "path3")
# Typical seconds per test, to turn a time share into test probabilities deterministically
# (measured seconds would make the schedule depend on the machine's load). Measured on ONNXRuntime: the
# wall time per test of each strategy alone (`python bench/portfolio.py --time 120 --jobs 1`, 2 cores;
# the table before this calibration gave oatest half its real cost and random twice its own).
# programs runs on no ONNXRuntime, so its figure is `random`'s scaled by their ratio on Inductor, the same load:
# `dlcfuzz fuzz --compiler inductor --strategy {random,programs} --time 60 --jobs 1 --seed 1`, side by side,
# 5 tests each, 21 s and 17 s in the compiler a test (programs 0.8x random; 30% spliced with a pattern). An
# absolute figure (19 s a test, measured at load 6-9) against ORT-measured ones gave it one test in 950 blocks
COST_S = {"random": 0.0045, "hirgen": 0.008, "disruptive": 0.006, "oatest": 0.018, "metamorphic": 0.53, "tzer": 0.4,
          "programs": 0.0045}


@dataclass(frozen=True)
class Arm:
    name: str
    strategy: str
    params: dict[str, Any] = field(default_factory=dict)
    # a strategy made for one compiler: an arm only where the backend names it (`Backend.own_strategies`)
    own: bool = False
    # an arm only where the backend has a program language (`Backend.program_dialect()`)
    needs_dialect: bool = False


ARMS = (
    Arm("random", "random"),
    Arm("hirgen", "hirgen"),
    Arm("disruptive", "hirgen", {"mode": "disruptive"}),
    Arm("oatest", "oatest"),
    Arm("metamorphic", "metamorphic"),
    Arm("tzer", "tzer", {"coverage": ["ir"]}, own=True),
    Arm("programs", "programs", needs_dialect=True),
)


def arms_for(compiler: str, backend: Backend | None) -> list[Arm]:
    """The arms that apply to `compiler`; no disruptive arm where the backend declares that no type/shape
    rule binds its front door (`disruptive_rules() == ()`)."""
    return [a for a in ARMS if (not a.own or (backend is not None and a.strategy in backend.own_strategies))
            and not (a.needs_dialect and (backend is None or backend.program_dialect() is None))
            and not (a.name == "disruptive" and backend is not None and backend.disruptive_rules() == ())]


@dataclass
class ArmStats:
    reward: float = 1.0  # decayed yield (a prior of one success)
    tests: float = 1.0  # decayed tests
    made: int = 0
    rewarded: int = 0
    distinct: int = 0
    roots: int = 0  # new root causes (the `root_cause` proxy) its tests found first
    first_fired: int = 0  # optimizations its tests fired first


class AutoStrategy(Strategy):
    name = "auto"
    summary = "every strategy in one campaign, scheduled by recent yield (the default)"
    handler = HANDLER
    regenerable = True
    options = (Option("ops", 10, "operators per generated graph", int), VALUES, SIZES, REGIONS,
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
                                          mine=self.mine_for(len(self.subs)), unwrap=lambda b: b[len(MAGIC) + 1:],
                                          horizon=self.horizon)
            self.subs.append(cls(sub_ctx))
        self.stats = [ArmStats() for _ in self.arms]
        self.folded = -1  # the last block whose yields are in the stats
        self.roots_seen: set[tuple[str, ...]] = set()  # root causes (the proxy) of the folded blocks
        self.fired_seen: set[str] = set()  # optimizations fired in the folded blocks
        # seq -> (root causes, fired optimizations) of a judged test not yet folded
        self.candidates: dict[int, tuple[set[tuple[str, ...]], set[str]]] = {}
        self.keyed: tuple[int, Verdict, str] | None = None  # (test id, verdict, key) of the finding being recorded
        self.judged: dict[int, int] = {}  # block -> tests judged
        # block -> (seq, arm, coverage yield) of its judged tests
        self.block_rewards: dict[int, list[tuple[int, int, float]]] = {}
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
            # the first test of each root cause and optimization: folding again from block 0 rewards them
            for test_id, root in first_roots(self.ctx.store):
                self.candidate(test_id - 1)[0].add(root)
            for test_id, optimization in self.ctx.store.first_fired():
                self.candidate(test_id - 1)[1].add(optimization)
            for arm, made, _, _ in self.ctx.store.arm_totals():  # the progress line's shares are the campaign's
                if arm < len(self.stats):
                    self.stats[arm].made = made

    def close(self) -> None:
        for sub in self.subs:
            sub.close()

    # ---- the schedule --------------------------------------------------
    def ready(self, seq: int) -> bool:
        """Block b is drawn from blocks up to b-2: those must be judged first (and an arm's own wait holds)."""
        b = seq // BLOCK
        return (b < 2 or self.judged.get(b - 2, 0) >= BLOCK) and all(sub.ready(seq) for sub in self.subs)

    def horizon(self, seq: int) -> int:
        """The last test of block b-2, which `ready` waits for (and so every earlier one): what an arm's own
        feedback may use for test `seq` without making the other arms wait (auto calls every arm's `ready` with
        each of its test numbers, whichever arm the test will be)."""
        return (seq // BLOCK - 1) * BLOCK - 1

    def shares(self) -> list[float]:
        rates = [s.reward / s.tests / COST_S.get(a.name, 0.05) for a, s in zip(self.arms, self.stats)]
        total = sum(rates)
        shares = [max(FLOOR, r / total) for r in rates]
        return [x / sum(shares) for x in shares]

    def floor_every(self, arm: int) -> int:
        """Arm `arm` has a floor test in every this many blocks."""
        return max(1, math.ceil(COST_S.get(self.arms[arm].name, 0.05) / FLOOR_TEST_COST_S - 1e-9))

    def floor_arm(self, seq: int) -> int | None:
        """The arm whose floor test `seq` is, or None (a test the bandit draws): arm i owns position
        i * BLOCK // arms of the blocks that are multiples of its `floor_every`."""
        step = BLOCK // len(self.arms)
        pos, b = seq % BLOCK, seq // BLOCK
        arm = pos // step
        if pos % step or arm >= len(self.arms) or b % self.floor_every(arm):
            return None
        return arm

    def choose(self, seq: int, seed: int) -> int:
        b = seq // BLOCK
        if self.folded < b - 2 or not self._shares:
            while self.folded < b - 2:  # idempotent and in order: a resumed run folds as the whole run did
                self.folded += 1
                self.fold(self.folded)
            self.prune((self.folded + 1) * BLOCK)
            self._shares = self.shares()
        floor = self.floor_arm(seq)
        if floor is not None:
            return floor
        # time shares -> test probabilities (a slow arm gets fewer tests for the same time)
        p = np.array([s / COST_S.get(a.name, 0.05) for a, s in zip(self.arms, self._shares)])
        return int(np.random.default_rng([seed, 0xA070]).choice(len(self.arms), p=p / p.sum()))

    def fold(self, b: int) -> None:
        """Decay every arm's yield by block b's virtual time and add block b's rewards: its tests'
        coverage yields and, in test order, the root causes and optimizations no earlier test had."""
        rewards = sorted(self.block_rewards.pop(b, []))
        span = sum(COST_S.get(self.arms[arm].name, 0.05) for _, arm, _ in rewards)
        decay = 0.5 ** (span / HALF_LIFE_S)
        for s in self.stats:
            s.reward *= decay
            s.tests *= decay
        for seq, arm, reward in rewards:
            roots, fired = self.candidates.pop(seq, (set(), set()))
            new_roots, new_fired = roots - self.roots_seen, fired - self.fired_seen
            self.roots_seen |= new_roots
            self.fired_seen |= new_fired
            stats = self.stats[arm]
            stats.roots += len(new_roots)
            stats.first_fired += len(new_fired)
            stats.reward += yield_of(reward, len(new_roots), len(new_fired))
            stats.tests += 1

    def candidate(self, seq: int) -> tuple[set[tuple[str, ...]], set[str]]:
        """The root causes and fired optimizations of test `seq`, to be rewarded when its block folds."""
        return self.candidates.setdefault(seq, (set(), set()))

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
        self.block_rewards.setdefault(b, []).append((seq, arm, reward))
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
        if j.fired:
            self.candidate(test.seq)[1].update(j.fired)
        reward = 1.0 if scarce else 0.0  # the coverage yield; root causes and optimizations are `fold`'s
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
    # The engine asks for a finding's early key, then, unless it is a duplicate of it, reduces it; then
    # it calls `found`. The last key given is the finding's stored key, which `found` reads.
    def early_key(self, test: Test, v: Verdict) -> str | None:
        _, sub, sub_test = self.inner(test)
        key = sub.early_key(sub_test, v)
        self.keyed = None if key is None else (test.test_id, v, key)
        return key

    def reduce(self, test: Test, v: Verdict) -> Reduction:
        _, sub, sub_test = self.inner(test)
        red = sub.reduce(sub_test, v)
        self.keyed = (test.test_id, v, red.key)
        return red

    def unreduced(self, test: Test, v: Verdict) -> Reduction:
        _, sub, sub_test = self.inner(test)
        red = sub.unreduced(sub_test, v)
        self.keyed = (test.test_id, v, red.key)
        return red

    def found(self, test: Test, distinct: bool) -> None:
        """The finding's root cause is a candidate of its test (new or not is `fold`'s to say)."""
        keyed, self.keyed = self.keyed, None
        arm, _, _ = self.inner(test)
        self.stats[arm].distinct += distinct
        if keyed is not None and keyed[0] == test.test_id:
            _, v, key = keyed
            self.candidate(test.seq)[0].add(root_cause(v.category, key, v.detail, v.configs))

    # ---- output --------------------------------------------------------
    def progress_fields(self) -> str:
        """Per arm: its share of the tests, of the (virtual) time, and the new root causes it found."""
        made = [s.made for s in self.stats]
        virtual = [n * COST_S.get(a.name, 0.05) for a, n in zip(self.arms, made)]
        return "arms (tests/time/new roots) " + " ".join(
            f"{a.name}:{100 * n / max(sum(made), 1):.0f}%/{100 * t / max(sum(virtual), 1e-9):.0f}%/{s.roots}"
            for a, n, t, s in zip(self.arms, made, virtual, self.stats))

    @classmethod
    def report_section(cls, store: StrategyStore) -> str:
        rows = store.arm_totals()
        if not rows:
            return ""
        names = dict(enumerate(a.name for a in arms_of_store(store)))
        roots: dict[int, int] = {}
        fired: dict[int, int] = {}
        for counts, firsts in ((roots, first_roots(store)), (fired, store.first_fired())):
            for test_id, _ in firsts:
                arm = store.arm_of(test_id - 1)
                if arm is not None:
                    counts[arm] = counts.get(arm, 0) + 1
        tests = sum(n for _, n, _, _ in rows)
        virtual = {arm: n * COST_S.get(names.get(arm, ""), 0.05) for arm, n, _, _ in rows}
        body = "".join(
            f"<tr><td>{html.escape(names.get(arm, str(arm)))}</td><td>{n}</td><td>{100 * n / tests:.1f}%</td>"
            f"<td>{100 * virtual[arm] / sum(virtual.values()):.1f}%</td><td>{roots.get(arm, 0)}</td>"
            f"<td>{fired.get(arm, 0)}</td><td>{rewarded}</td><td>{yield_of(reward, roots.get(arm, 0), fired.get(arm, 0)):.0f}"
            "</td></tr>" for arm, n, rewarded, reward in rows)
        return ("<h2>Strategies (auto)</h2><p>Tests per strategy, their share of the tests and of the schedule's "
                "virtual time (typical seconds per test), the new root causes they found first (the schedule's "
                "proxy of a cluster), the optimizations they fired first, the tests that added coverage, and "
                "their yield (undecayed).</p><table><tr><th>strategy</th><th>tests</th><th>share of tests</th>"
                "<th>share of time</th><th>new root causes</th><th>first-fired optimizations</th>"
                "<th>added coverage</th><th>yield</th></tr>"
                f"{body}</table>")


def arms_of_store(store: StrategyStore) -> list[Arm]:
    """The arms of the campaign in `store`, in the order its `arm` numbers count them (`arms_for` its
    compiler: the arms that do not apply drop out of the numbering)."""
    from dlcfuzz.backends import get_backend

    run = store.first_run()
    if run is None:
        return list(ARMS)
    try:
        backend = get_backend(run["compiler"])
    except Exception:  # noqa: BLE001 - a compiler not installed here: number by the whole table
        return list(ARMS)
    return arms_for(run["compiler"], backend)


def yield_of(coverage: float, roots: int, first_fired: int) -> float:
    """An arm's yield: coverage-adding tests, new root causes and first-fired optimizations, weighted."""
    return coverage + ROOT_CAUSE_WEIGHT * roots + FIRST_FIRED_WEIGHT * first_fired


def root_cause(category: str, key: str, detail: str, configs: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """A proxy of a finding's root-cause cluster (engine/clusters.py's cluster key) from what is known
    when the strategy learns: its category, its stored key (after reduction), detail and configurations."""
    k = DedupKey.parse(key)
    opts = k.option("opts") or k.option("passes") or ""
    opts = "" if opts == "none" else opts
    if clustered_by_ops(category):
        where = opts or ("every-config" if category == C.WRONG_RESULT else ",".join(sorted(configs)))
        reason = next((f for f in k.fields if f in ("shape", "dtype", "nan", "inf", "value")), "")
        ops = ",".join(sorted(o for o in (k.option("ops") or "").split(",") if o))
        return ("numeric", category, where, reason, ops)
    # the key's message when the detail holds none (as clusters.py reads it)
    key_message = k.fields[1] if len(k.fields) > 1 and k.tag in message_key_tags() else ""
    return ("error", category, opts, message_class(detail) or message_class(key_message))


def first_roots(store: StrategyStore) -> list[tuple[int, tuple[str, ...]]]:
    """(test id, root cause) of each root cause's first test (the lowest number) among the stored findings."""
    first: dict[tuple[str, ...], int] = {}
    for row in store.findings(distinct_only=False):
        root = root_cause(row["category"] or "", row["key"] or "", row["detail"] or "",
                          json.loads(row["configs"] or "[]"))
        first[root] = min(first.get(root, row["test_id"]), row["test_id"])
    return sorted((test_id, root) for root, test_id in first.items())


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

