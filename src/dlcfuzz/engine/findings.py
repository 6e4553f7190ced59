"""Recording a finding: dedup by signature, reduction (on the campaign's reduction budget), the
finding folder. Strategy-blind: the strategy gives the keys, the reduction and the folder's files."""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from dlcfuzz.engine.scrub import scrub
from dlcfuzz.oracle.opinions import SUSPECTED, SecondOpinion
from dlcfuzz.oracle.signature import digest
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.strategies import Context, Reduction, Strategy, Test
from dlcfuzz.strategies.base import Finding

if TYPE_CHECKING:
    from dlcfuzz.engine.known import Register
    from dlcfuzz.engine.store import Store


class InternalErrors(Protocol):
    def add(self, test_id: int | None, seq: int, seed: int, phase: str, error: str, tb: str) -> None: ...


class FindingRecorder(Protocol):
    """What recording a finding uses of the campaign (engine/campaign.py's `Campaign`, which imports this
    module: a Protocol here, so that the two do not import each other)."""

    store: Store
    strategy: Strategy
    ctx: Context
    counts: dict[str, int]

    @property
    def internal(self) -> InternalErrors: ...

    def log(self, msg: str) -> None: ...

    def register(self) -> Register: ...

    def finding_counts(self, distinct: bool) -> None: ...


def record_finding(camp: FindingRecorder, test: Test, v: Verdict) -> None:
    store, strategy, ctx = camp.store, camp.strategy, camp.ctx
    if store.has_finding_for(test.test_id, v.key):  # recorded before a kill; the test was re-run
        camp.finding_counts(distinct=False)
        return
    common = dict(test_id=test.test_id, category=v.category, compiler=ctx.compiler, version=ctx.version,
                  configs=json.dumps(v.configs), detail=v.detail[:4000], input_set=v.input_set)
    early = strategy.early_key(test, v)
    if early is not None:
        existing = store.find_signature(digest(early))
        if existing is not None:
            store.add_finding(signature=digest(early), key=early, duplicate_of=existing, nodes=strategy.size(test),
                              **common)
            camp.finding_counts(distinct=False)
            strategy.found(test, False)
            return
    t0 = time.monotonic()
    ctx.new_budget()
    try:
        red = strategy.reduce(test, v)
    except Exception as e:  # a reducer's failure is ours: the finding is kept unreduced
        camp.internal.add(test.test_id, test.seq, test.seed, "reduce", f"{type(e).__name__}: {e}", traceback.format_exc())
        red = strategy.unreduced(test, v)
        red.not_minimal = f"the reducer failed with an internal error of dlcfuzz ({type(e).__name__}: {str(e)[:200]})"
    if red.not_minimal is None and not ctx.reduce:
        red.not_minimal = "reduction is off (--no-reduce)"
    ctx.reduce_s[0] += time.monotonic() - t0
    if red.dismissed:
        store.count_unknown(red.dismissed)
        return
    signature = digest(red.key)
    existing = store.find_signature(signature)
    fid = store.add_finding(signature=signature, key=red.key, duplicate_of=existing, nodes=red.nodes,
                            reduced_nodes=red.reduced_nodes, not_minimal=red.not_minimal, **common)
    camp.finding_counts(distinct=existing is None)
    strategy.found(test, existing is None)
    if existing is not None:
        return
    write_finding(camp, test, v, red, fid, signature)


def write_finding(camp: FindingRecorder, test: Test, v: Verdict, red: Reduction, fid: int, signature: str) -> None:
    ctx = camp.ctx
    folder = ctx.out / "findings" / f"{fid:04d}-{v.category}"
    folder.mkdir(parents=True, exist_ok=True)
    title = f"dlcfuzz finding {fid}: {v.category} in {ctx.version} ({', '.join(v.configs)})"
    finding = Finding(fid, test.test_id, signature, red.key, title, folder)
    try:
        script = red.write(finding)
    except Exception as e:  # the folder keeps what was written; the finding stays in the store
        camp.internal.add(test.test_id, test.seq, test.seed, "write", f"{type(e).__name__}: {e}", traceback.format_exc())
        script = None
    opinion = second_opinion(camp, test, red)
    detail = folder / "detail.txt"
    if not detail.exists():
        detail.write_text(f"{title}\nsignature {signature}\nkey {red.key}\ntest {test.test_id}, seed {test.seed}"
                          f"{input_set_note(v.input_set)}\n"
                          f"{reduction_line(red.nodes, red.reduced_nodes, red.not_minimal)}\n\n{v.detail}\n")
    if opinion is not None:
        with detail.open("a") as f:
            f.write(f"\n{opinion.text()}\n")
    for path in (detail, folder / "repro.py"):  # no dlcfuzz frames, no paths of this machine
        if path.exists():
            path.write_text(scrub(path.read_text()))
    camp.store.update_finding(fid, reproducer=scrub(script) if script else script,
                              opinions=opinion.to_json() if opinion is not None else None)
    suspected = opinion is not None and opinion.suspected_reference_error
    if suspected:
        camp.counts["suspected"] += 1
    known = known_bug(camp, fid, folder)
    if known is not None:
        camp.counts["known"] += 1
    camp.log(f"\n{'known' if known else 'new'} finding {fid}: {v.category} ({', '.join(v.configs)})"
             f"{', ' + red.summary if red.summary else ''}{' (not minimal: ' + red.not_minimal + ')' if red.not_minimal else ''}"
             f"{', known: ' + known if known else ''}"
             f"{', ' + SUSPECTED.upper() + ' (our bug until shown otherwise)' if suspected else ''}: {folder}")


def second_opinion(camp: FindingRecorder, test: Test, red: Reduction) -> SecondOpinion | None:
    """The reduction's second opinion (independent evaluators of the reduced graph), once per distinct
    finding; its time counts as reduction time (outside the campaign's testing time). A failure is ours."""
    if red.second_opinion is None:
        return None
    t0 = time.monotonic()
    try:
        return red.second_opinion()
    except Exception as e:
        camp.internal.add(test.test_id, test.seq, test.seed, "second-opinion", f"{type(e).__name__}: {e}",
                          traceback.format_exc())
        return None
    finally:
        camp.ctx.reduce_s[0] += time.monotonic() - t0


def input_set_note(index: int) -> str:
    """Which of its test's input sets shows a finding: the stored test holds that set as its inputs."""
    return f", input set {index} (the stored test's inputs)" if index else ""


def reduction_line(nodes: int | None, reduced_nodes: int | None, not_minimal: str | None) -> str:
    """How far a finding was reduced and, when its reduced form may not be minimal, why."""
    size = f"reduced {nodes} -> {reduced_nodes}" if nodes is not None and reduced_nodes is not None else "reduction"
    return f"{size}: not minimal, {not_minimal}" if not_minimal else f"{size}: minimal under dlcfuzz's reduction moves"


def known_bug(camp: FindingRecorder, fid: int, folder: Path) -> str | None:
    """The tracker reference of the known upstream bug a new finding matches (the compiler's
    known-bugs register), or None."""
    from dlcfuzz.engine.clusters import facts_of

    row = camp.store.finding(fid)
    k = camp.register().match(facts_of(row, folder), row.get("detail") or "")
    return None if k is None else k.ref
