"""The `auto` schedule: rewards new root causes (not distinct findings) and first-fired optimizations,
keeps a floor of the tests per arm, and stays a function of the master seed. The strategy is built by a
real campaign (ONNXRuntime, no worker started); judgements are constructed, so each test runs in
seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

from dlcfuzz.engine.campaign import Campaign, campaign_options  # noqa: E402
from dlcfuzz.oracle import categories as C  # noqa: E402
from dlcfuzz.oracle.verdict import Verdict  # noqa: E402
from dlcfuzz.strategies.auto import (  # noqa: E402
    BLOCK,
    COST_S,
    FIRST_FIRED_WEIGHT,
    AutoStrategy,
    first_roots,
    root_cause,
)
from dlcfuzz.strategies.base import Judgement  # noqa: E402
from dlcfuzz.strategies.base import Test as StrategyTest  # noqa: E402

SEED = 3
WRONG_ADD = Verdict("bug", C.WRONG_RESULT, "output 0: max abs error 2.0", ["ort-all"],
                    key="wrong|onnxruntime|ort-all|value|ops=Add")


def auto_strategy(out: Path, seed: int = SEED) -> AutoStrategy:
    camp = Campaign(campaign_options(compiler="onnxruntime", strategy="auto", ops=5, model="tiny_vgg", seconds=60,
                                     seed=seed, out=out, quiet=True))
    assert isinstance(camp.strategy, AutoStrategy)
    return camp.strategy


def arm_index(auto: AutoStrategy, name: str) -> int:
    return [a.name for a in auto.arms].index(name)


def floor_seq(auto: AutoStrategy, block: int, arm: int) -> int:
    """A test of `block` that is `arm`'s floor test."""
    return next(s for s in range(block * BLOCK, (block + 1) * BLOCK) if auto.floor_arm(s) == arm)


def judge(auto: AutoStrategy, seq: int, arm: int, finding: tuple[Verdict, str] | None = None,
          fired: tuple[str, ...] = ()) -> None:
    """Test `seq` of `arm` judged as the campaign does: a finding (its verdict and stored key) is keyed
    (the strategy's `early_key` or `reduce` records the key), then `found`, then the strategy learns (the
    arms used here learn nothing themselves)."""
    test = StrategyTest(seq, seq, b"", (arm, StrategyTest(seq, seq, b"")), test_id=seq + 1)
    if finding is not None:
        auto.keyed = (test.test_id, *finding)
        auto.found(test, True)
    auto.learn(test, Judgement([], fired=list(fired)), [])


def campaign_arms(auto: AutoStrategy, blocks: int, events: dict[int, dict] | None = None,
                  reverse: bool = False) -> list[int]:
    """Choose and judge `blocks` blocks in order (block b chosen once blocks up to b-2 are judged);
    `events`: seq -> judge() keywords; `reverse`: each block's tests are judged last first. The arms,
    in test order."""
    arms: list[int] = []
    for b in range(blocks):
        seqs = range(b * BLOCK, (b + 1) * BLOCK)
        block = [auto.choose(seq, seq) for seq in seqs]
        for seq, arm in zip(seqs, block):
            auto.ctx.store.set_arm(seq, arm)
            auto.stats[arm].made += 1  # as make_test counts it
        for seq, arm in sorted(zip(seqs, block), reverse=reverse):
            judge(auto, seq, arm, **(events or {}).get(seq, {}))
        arms += block
    return arms


def test_schedule_is_a_function_of_the_seed_and_the_judgements(tmp_path):
    runs = []
    for name in ("a", "b"):
        auto = auto_strategy(tmp_path / name)
        random_floor = floor_seq(auto, 0, arm_index(auto, "random"))
        runs.append(campaign_arms(auto, 8, {random_floor: {"finding": (WRONG_ADD, WRONG_ADD.key)}}))
    assert runs[0] == runs[1]
    other = campaign_arms(auto_strategy(tmp_path / "c", seed=SEED + 1), 8)
    assert other != runs[0]  # the seed draws the arms


def test_a_new_root_cause_gains_share_and_the_same_root_cause_again_does_not(tmp_path):
    """oatest finds a wrong Add in block 2: new in one campaign, found before by random (another
    signature, the same root cause) in the other. Only the new one raises oatest's share."""
    shares, roots = {}, {}
    for case in ("new", "again"):
        auto = auto_strategy(tmp_path / case)
        oatest, random = arm_index(auto, "oatest"), arm_index(auto, "random")
        events = {floor_seq(auto, 2, oatest): {"finding": (WRONG_ADD, WRONG_ADD.key)}}
        if case == "again":
            other_signature = WRONG_ADD.key + "|opts=none"  # another dedup key, the same proxy
            events[floor_seq(auto, 0, random)] = {"finding": (WRONG_ADD, other_signature)}
        campaign_arms(auto, 5, events)  # block 2 is folded when block 4 is chosen
        shares[case] = auto.shares()
        roots[case] = [s.roots for s in auto.stats]
    assert roots["new"][oatest] == 1 and roots["again"][oatest] == 0 and roots["again"][random] == 1
    assert shares["new"][oatest] > 2 * shares["again"][oatest]
    assert shares["again"][random] > shares["new"][random]


def test_every_arm_keeps_its_floor_of_the_tests(tmp_path):
    """random finds a new root cause in every block, so the bandit gives it nearly all the time; every
    other arm still gets a test of every block, metamorphic (100 times dearer) one of every few blocks,
    which keeps its time within bounds."""
    auto = auto_strategy(tmp_path / "run")
    random, metamorphic = arm_index(auto, "random"), arm_index(auto, "metamorphic")
    every = auto.floor_every(metamorphic)
    assert every > 1 and all(auto.floor_every(i) == 1 for i in range(len(auto.arms)) if i != metamorphic)
    blocks = 2 * every
    ops = ("Add", "Mul", "Sub", "Div", "Pow", "Relu", "Tanh", "Exp", "Log", "Sin", "Cos", "Abs")
    crashes = [Verdict("bug", C.CRASH, f"SIGSEGV in the {ops[b % 12]} kernel of {ops[b // 12]}", ["ort-all"],
                       key=f"crash|onnxruntime|run|{b}") for b in range(blocks)]
    events = {floor_seq(auto, b, random): {"finding": (v, v.key)} for b, v in enumerate(crashes)}
    arms = campaign_arms(auto, blocks, events)
    assert auto.shares()[random] > 0.8
    for i in range(len(auto.arms)):
        for b in range(0, blocks, auto.floor_every(i)):
            assert arms[b * BLOCK:(b + auto.floor_every(i)) * BLOCK].count(i) >= 1, (auto.arms[i].name, b)
    assert 2 <= arms.count(metamorphic) <= 4
    virtual = [arms.count(i) * COST_S[a.name] for i, a in enumerate(auto.arms)]
    assert virtual[metamorphic] < 0.15 * sum(virtual)


def test_a_first_fired_optimization_rewards_its_arm_once(tmp_path):
    """The first test (in test order, whatever the order they are judged in) that fires an optimization
    earns its arm the yield; the same optimization fired again earns nothing."""
    runs = {}
    for case in ("fired", "none"):
        auto = auto_strategy(tmp_path / case)
        oatest, random = arm_index(auto, "oatest"), arm_index(auto, "random")
        first, same_block = floor_seq(auto, 0, random), floor_seq(auto, 0, oatest)
        again, other = floor_seq(auto, 1, oatest), floor_seq(auto, 2, oatest)
        assert first < same_block  # judged after it: each block is judged last test first
        events = {} if case == "none" else {
            first: {"fired": ("ConstantFolding",)}, same_block: {"fired": ("ConstantFolding",)},
            again: {"fired": ("ConstantFolding",)}, other: {"fired": ("ConstantFolding", "GeluFusion")}}
        campaign_arms(auto, 5, events, reverse=True)
        runs[case] = auto
    fired, none = runs["fired"], runs["none"]
    assert fired.stats[random].first_fired == 1 and fired.stats[oatest].first_fired == 1  # GeluFusion
    for arm in (random, oatest):
        gain = fired.stats[arm].reward - none.stats[arm].reward
        # one first firing each, decayed by the (diverging) schedules' virtual time
        assert 0.8 * FIRST_FIRED_WEIGHT < gain < 1.1 * FIRST_FIRED_WEIGHT
    assert fired.shares()[oatest] > none.shares()[oatest]


def test_root_cause_proxy_follows_the_cluster_key():
    msg = "onnxruntime rejects: [ONNXRuntimeError] : 1 : FAIL : Node (n4) Op (Pad) failed: axes [3] out of range"
    key = "error|onnxruntime|Fail|x"
    a = root_cause(C.UNEXPECTED_ERROR, key, msg, ["ort-all"])
    b = root_cause(C.UNEXPECTED_ERROR, key, msg.replace("n4", "n17").replace("[3]", "[1]"), ["ort-basic"])
    assert a == b  # names, numbers and shapes differ between instances of one bug
    assert root_cause(C.WRONG_RESULT, WRONG_ADD.key, "", ["ort-all"]) == \
        root_cause(C.WRONG_RESULT, WRONG_ADD.key.replace("ort-all", "ort-basic"), "", ["ort-basic"])
    assert root_cause(C.WRONG_RESULT, WRONG_ADD.key, "", ["ort-all"]) != \
        root_cause(C.WRONG_RESULT, WRONG_ADD.key.replace("ops=Add", "ops=Add,Mul"), "", ["ort-all"])


def test_progress_line_and_report_show_each_arms_tests_time_and_new_root_causes(tmp_path):
    auto = auto_strategy(tmp_path / "run")
    random, oatest = arm_index(auto, "random"), arm_index(auto, "oatest")
    r, o = floor_seq(auto, 0, random), floor_seq(auto, 1, oatest)
    # blocks 0 and 1 are folded when block 3 is chosen
    campaign_arms(auto, 4, {r: {"finding": (WRONG_ADD, WRONG_ADD.key)}, o: {"finding": (WRONG_ADD, WRONG_ADD.key)}})
    line = auto.progress_fields()
    assert line.startswith("arms (tests/time/new roots) ")
    assert all(f" {a.name}:" in line for a in auto.arms)
    assert line.split(f" {auto.arms[random].name}:")[1].split()[0].endswith("/1")  # random found it first
    store = auto.ctx.store
    for seq, key in ((r, WRONG_ADD.key), (o, WRONG_ADD.key + "|opts=none")):
        store.add_finding(test_id=seq + 1, category=C.WRONG_RESULT, compiler="onnxruntime", version="x",
                          configs=json.dumps(WRONG_ADD.configs), detail=WRONG_ADD.detail, signature=key, key=key,
                          duplicate_of=None)
    assert [t for t, _ in first_roots(store)] == [r + 1]
    html = AutoStrategy.report_section(store)
    assert "share of tests" in html and "share of time" in html and "new root causes" in html
    row = html.split("<tr><td>random</td>")[1].split("</tr>")[0]
    assert row.split("</td><td>")[3] == "1"  # tests, share of tests, share of time, new root causes


def test_regions_reach_every_arm_that_makes_them_and_a_share_outside_0_1_is_refused(tmp_path):
    """`auto --regions S` hands S to each arm that wraps node ranges in regions (random, hirgen, disruptive,
    oatest, metamorphic): at 1.0 the random arm's tests hold regions, at 0 none do (issue 40's acceptance
    campaigns run `auto` with control flow on); a share outside [0, 1] is one clear usage error."""
    from dlcfuzz.errors import UsageError

    def arms(regions: float, name: str) -> dict[str, object]:
        camp = Campaign(campaign_options(compiler="onnxruntime", strategy="auto", ops=6, model="tiny_vgg",
                                         seconds=60, seed=SEED, out=tmp_path / name, quiet=True, regions=regions))
        assert isinstance(camp.strategy, AutoStrategy)
        return {arm.name: sub for arm, sub in zip(camp.strategy.arms, camp.strategy.subs, strict=True)}

    on, off = arms(1.0, "on"), arms(0.0, "off")
    takes = [name for name, sub in on.items() if "regions" in sub.params]
    assert {"random", "hirgen", "oatest", "metamorphic"} <= set(takes)
    assert all(on[n].params["regions"] == 1.0 and off[n].params["regions"] == 0.0 for n in takes)
    with_regions = [any(n.bodies() for n in on["random"].make_test(seq, 100 + seq).payload.graph.all_nodes())
                    for seq in range(6)]
    assert sum(with_regions) >= 4, with_regions  # a test whose graph offers no range to wrap keeps none
    assert not any(any(n.bodies() for n in off["random"].make_test(seq, 100 + seq).payload.graph.all_nodes())
                   for seq in range(6))
    with pytest.raises(UsageError, match="--regions"):
        arms(1.5, "bad")
