"""The Strategy protocol: what the campaign engine needs from a way of making and judging tests.

The engine is strategy-blind. A strategy owns its options, its validation, how it makes a test (a
typed payload and the bytes the worker and the store get), its worker-side handler, which oracle
judges a result, how a finding reduces and which files its finding folder holds, and its report
section. It never touches the worker pool's loop, the store's SQL, dedup or the budget.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from dlcfuzz.backends.base import BackendBase
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.opinions import SecondOpinion
from dlcfuzz.oracle.testcase import Observation
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.reduce.budget import ReductionBudget

if TYPE_CHECKING:
    from dlcfuzz.backends.base import Backend, Config
    from dlcfuzz.exec.pool import Pool, TaskResult, TaskRunner
    from dlcfuzz.gen.coverage import Coverage


class StrategyStore(Protocol):
    """What strategies read and write of the campaign's store (engine/store.py's `Store`, a floor above
    them: they see it through this Protocol)."""

    def next_seq(self) -> int: ...

    def first_run(self) -> dict[str, Any] | None: ...  # the campaign's first run: seed, compiler, strategy, args

    def coverage(self, before_test: int | None = None) -> list[str]: ...

    def corpus(self) -> dict[int, int]: ...

    def test_blob(self, test_id: int) -> bytes | None: ...

    def coverage_test_ids(self) -> list[int]: ...

    def blobs_from(self, seq: int) -> Any: ...  # (seq, blob) rows, in order

    def blobs_before(self, seq: int) -> Any: ...  # (seq, blob) rows, the latest first

    def add_triggers(self, test_id: int, pattern: str, fired: dict[str, bool]) -> None: ...

    def trigger_rates(self) -> dict[str, tuple[int, int]]: ...

    def first_fired(self) -> list[tuple[int, str]]: ...

    def findings(self, distinct_only: bool = True) -> list[dict[str, Any]]: ...  # rows of `findings`, by id

    def set_arm(self, seq: int, arm: int) -> None: ...

    def set_reward(self, seq: int, reward: float) -> None: ...

    def arm_of(self, seq: int) -> int | None: ...

    def schedule_rows(self) -> list[tuple[int, int, float | None]]: ...

    def arm_totals(self) -> list[tuple[int, int, int, float]]: ...


# a test learns only from tests at least this many numbers before it (`Strategy.horizon`)
LAG = 8
# why a reduced finding is kept as found (`Strategy.unless_shown_fresh`)
NOT_SHOWN_FRESH = ("its reduced test did not show it in a fresh worker: the reduction's checks depended on what "
                   "earlier checks left in their worker, so it is kept as found")


@dataclass(frozen=True)
class Option:
    """A strategy option: the `dlcfuzz fuzz` flag `--name` (dashes for underscores), its default and help."""

    name: str
    default: Any
    help: str
    type: Callable[[str], Any] = str


@dataclass
class Test:
    """One test as the engine carries it: the bytes the worker runs and the store keeps, the
    coverage items it adds at generation time, and the strategy's typed payload."""

    seq: int
    seed: int
    blob: bytes
    payload: Any = None
    coverage: list[str] = field(default_factory=list)
    test_id: int = 0
    gain: int = 0  # coverage items it added (at generation, then when it ran)
    added: list[str] = field(default_factory=list)  # the items it added at generation
    deadline_s: float | None = None  # None: the campaign's


@dataclass
class Judgement:
    """A strategy's verdicts on one worker result."""

    verdicts: list[Verdict]
    observations: list[Observation] = field(default_factory=list)  # what the store keeps per configuration
    valid: bool = False  # some configuration compiled and ran it
    coverage: list[str] = field(default_factory=list)  # items measured while it ran (inside the compiler)
    blob: bytes | None = None  # the test as it really ran, when the worker changed it (re-sampled inputs)
    compiler_s: float = 0.0  # time inside the compiler's own calls
    fired: list[str] = field(default_factory=list)  # targeted optimizations it fired (OATest's trigger report)
    # the compiler's passes or rewrites that acted on it, as its compiles recorded them (`Backend.applied_label`):
    # the report shows them; nothing learns from them
    applied: list[str] = field(default_factory=list)

    @property
    def executions(self) -> int:
        """Runs of a compiled program on one input set whose outputs were judged."""
        return sum(o.status == "ok" for o in self.observations)


@dataclass
class Finding:
    """What the engine tells a strategy about a finding it writes."""

    id: int
    test_id: int
    signature: str
    key: str
    title: str
    folder: Path


@dataclass
class Reduction:
    """A reduced finding: its dedup key and how to write its folder (returns the reproducer)."""

    key: str
    nodes: int
    reduced_nodes: int
    write: Callable[[Finding], str | None]
    summary: str = ""  # one line for the log, e.g. "reduced 9 -> 2 nodes"
    dismissed: str | None = None  # reduction showed it is no finding: the unknown category it is counted as
    # why the reduced form may not be minimal (the budget ran out, reduction was off or failed, the
    # finding did not show again alone); None when reduction ran to its fixed point
    not_minimal: str | None = None
    # the second opinion of a numeric finding on its reduced form (strategies/opinions.py): the engine calls
    # it once, for a distinct finding, after reduction; None where the strategy has none to give
    second_opinion: Callable[[], SecondOpinion | None] | None = None


@dataclass
class Context:
    """What the engine gives a strategy: options, the compiler, the store (read-only helpers),
    the coverage set, a reducer pool and a log."""

    compiler: str
    seed: int
    params: dict[str, Any]
    configs: list[Config]
    configs_picked: bool  # the user chose --configs: strategies compare exactly those
    backend: Backend | None
    version: str
    store: StrategyStore
    coverage: Coverage
    out: Path
    reduce: bool
    seconds: float
    max_tests: int | None
    reducer_pool: Callable[[], TaskRunner]
    # the next reducer_pool() starts a new worker: a check that must not inherit what earlier checks left there
    fresh_reducer: Callable[[], None] = lambda: None
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True)
    reduce_s: list[float] = field(default_factory=lambda: [0.0])  # time spent reducing, all findings
    reduce_budget_s: float | None = None  # one finding's reduction seconds (None: the backend's reduction_s)
    input_sets: int = 1  # input sets each compiled test runs (`--input-sets`, else the backend's `input_sets`)
    # the budget of the finding being reduced: the engine gives each finding a new one; a list, so that
    # the copies of the context `auto` gives its strategies share it
    budget_box: list[ReductionBudget] = field(
        default_factory=lambda: [ReductionBudget.disabled("no reduction has started")])
    mine: Callable[[int], bool] | None = None  # inside `auto`: whether test number `seq` is this strategy's
    unwrap: Callable[[bytes], bytes] = lambda blob: blob  # a stored blob as this strategy wrote it
    # inside `auto`: the last test number whose results test `seq` may learn from (`Strategy.horizon`); auto's
    # schedule judges those before it makes `seq`, whatever the arm, and its numbers are the ones subs see
    horizon: Callable[[int], int] | None = None

    def own_blobs(self, seqs: Any) -> Any:
        """(seq, blob) of the stored tests that are this strategy's, as it wrote them."""
        for seq, blob in seqs:
            if self.mine is None or self.mine(seq):
                yield seq, self.unwrap(blob)

    @property
    def budget(self) -> ReductionBudget:
        return self.budget_box[0]

    def new_budget(self, seconds: float | None = None) -> ReductionBudget:
        """A budget of its own for the next finding's reduction: `--reduce-budget`, else `seconds` (a
        strategy whose candidates compile slowly asks for more), else the compiler's `reduction_s`."""
        if not self.reduce:
            self.budget_box[0] = ReductionBudget.disabled("reduction is off (--no-reduce)")
        else:
            if self.reduce_budget_s is not None:
                seconds = self.reduce_budget_s
            elif seconds is None:
                seconds = (self.backend or BackendBase).reduction_s
            self.budget_box[0] = ReductionBudget(seconds, 3 * (self.backend or BackendBase).reduction_checks)
        return self.budget


class Strategy:
    """Base class of strategies. Subclasses set the class attributes and override the methods."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    handler: ClassVar[str] = "dlcfuzz.exec.worker:make_handler"  # the worker-side hook
    options: ClassVar[tuple[Option, ...]] = ()
    needs_backend: ClassVar[bool] = True
    # make_test(seq, seed) after restore(seq) gives the same test again (a pure function of the master
    # seed and the stored state): routine tests then keep no blob in the store
    regenerable: ClassVar[bool] = False
    compilers: ClassVar[tuple[str, ...] | None] = None  # None: any compiler

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.params = ctx.params
        self.counts: dict[str, int] = {}

    # ---- set-up ----------------------------------------------------------
    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        """Refuse bad options (UsageError, one line) before anything is written."""

    def handler_init(self) -> dict[str, Any]:
        from dlcfuzz.backends import plugin_modules

        return {"compiler": self.ctx.compiler, "plugins": plugin_modules()}

    def deadline_s(self) -> float:
        return self.ctx.backend.deadline_s if self.ctx.backend is not None else 60.0

    @property
    def native_frames(self) -> tuple[str, ...]:
        """The backend's stack-frame patterns: crash and error signatures keep its innermost frames."""
        return self.ctx.backend.frame_patterns if self.ctx.backend is not None else ()

    def start(self, pool: Pool, resumed: bool) -> None:
        """Called once the worker pool is up (probe capabilities, build a seed pool, restore state)."""

    # ---- tests -----------------------------------------------------------
    def make_test(self, seq: int, seed: int) -> Test:
        raise NotImplementedError

    def decode(self, blob: bytes) -> Any:
        """The payload of a stored test (tests in flight at a kill are re-run from the store)."""
        raise NotImplementedError

    def judge(self, test: Test, result: TaskResult) -> Judgement:
        """Verdicts on a worker result (`exec.pool.TaskResult`): `result.status` is ok, error,
        crash, timeout or oom."""
        raise NotImplementedError

    def restore(self, seq: int) -> None:
        """Rebuild the state the strategy had when it made test `seq` (to regenerate a compacted test)."""
        raise NotImplementedError

    def keeps_blob(self, test: Test) -> bool:
        """Whether the store must keep this routine test whole (it cannot be regenerated)."""
        return not self.regenerable

    def light_blob(self, test: Test) -> bytes | None:
        """What the store keeps of a routine test that keeps_blob() when less than the whole test
        rebuilds it from the store (inflate); None keeps the whole test."""
        return None

    def is_light(self, blob: bytes) -> bool:
        """Whether a stored blob is a light one (light_blob)."""
        return False

    def inflate(self, blob: bytes) -> bytes:
        """The whole test of a stored blob: a light one rebuilt from the store and checked against
        the digest of the test that ran (InternalError if it differs); any other as it is."""
        return blob

    def fingerprint(self, test: Test) -> bytes:
        """What a regenerated test must reproduce exactly (e.g. the graph and configurations; not inputs
        that the worker may re-sample deterministically)."""
        return test.blob

    def learn(self, test: Test, judgement: Judgement, new_coverage: list[str]) -> None:
        """Feedback after a test is judged: the coverage items it added (seed pools grow here)."""

    def ready(self, seq: int) -> bool:
        """Whether test `seq` can be made now (a schedule may wait for earlier results)."""
        return True

    def horizon(self, seq: int) -> int:
        """The last test number whose results test `seq` may learn from: LAG numbers before it (under `auto`,
        auto's own horizon), so that what a test learns is the same whatever --jobs and the timing, provided
        `ready(seq)` waits until the tests up to it are judged."""
        return self.ctx.horizon(seq) if self.ctx.horizon is not None else seq - LAG

    def failed(self, seq: int) -> None:
        """Test `seq` was an internal error (making or judging it raised)."""

    def found(self, test: Test, distinct: bool) -> None:
        """A finding of `test` was recorded (before `learn` of that test)."""

    def close(self) -> None:
        """The campaign ends: release what the strategy started."""

    # ---- findings --------------------------------------------------------
    def early_key(self, test: Test, verdict: Verdict) -> str | None:
        """The dedup key when it is known before reduction (a duplicate is then not reduced);
        None when the key depends on the reduced form (numeric findings)."""
        return verdict.key

    def reduce(self, test: Test, verdict: Verdict) -> Reduction:
        raise NotImplementedError

    def unreduced(self, test: Test, verdict: Verdict) -> Reduction:
        """The finding as it was found (when reduction itself failed)."""
        raise NotImplementedError

    def unless_shown_fresh(self, test: Test, verdict: Verdict, shows: Callable[[], bool]) -> Reduction | None:
        """Every check of a reduction runs in the reducer's one worker, after the checks before it: a check that
        leaves its worker broken (a compiler's state damaged by an error it survived) makes every later candidate
        "show" the finding, down to a lone unrelated node, statement or pass. `shows()` checks the reduced test once
        more, in a new worker (`Context.fresh_reducer`): None when it shows the finding there (the reduction
        stands); else the finding as found (`unreduced`), saying why. Call it only when the reduction changed the
        test: it costs a worker start."""
        self.ctx.fresh_reducer()
        if shows():
            return None
        red = self.unreduced(test, verdict)
        red.not_minimal = NOT_SHOWN_FRESH
        return red

    def size(self, test: Test) -> int:
        """The size of a test for the findings table (graph nodes, passes)."""
        return 0

    # ---- output ----------------------------------------------------------
    def progress_fields(self) -> str:
        """Extra fields of the progress line."""
        return ""

    @classmethod
    def report_section(cls, store: StrategyStore) -> str:
        """HTML the strategy adds to the report."""
        return ""


def judgement_of_failure(compiler: str, res: TaskResult, native_frames: tuple[str, ...] = ()) -> Judgement:
    """A worker result other than ok: a death (signal, OOM, hang) is the crash oracle's finding; a
    handler error is dlcfuzz's own (the engine counts it as an internal error), never a finding.
    `native_frames`: the backend's stack-frame patterns, for the crash's signature."""
    from dlcfuzz.oracle.verdict import crash_verdict

    if res.status == "error":
        return Judgement([Verdict("unknown", C.INTERNAL_ERROR, (res.error or "")[-2000:])])
    return Judgement([crash_verdict(compiler, res.status, res.error or res.status, res.progress, res.stderr_tail or "",
                                    native_frames)])
