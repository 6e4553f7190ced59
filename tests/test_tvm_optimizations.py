"""How far oatest's TVM trigger check reaches (real apache-tvm, no mocks): every tag of the patterns written for TVM's
Relax passes fires in the configuration oatest makes for it; a pass is watched under the name its pass object records;
passes that rewrite functions get outlined private functions (closures for LambdaLift) and the result is unchanged;
the passes no configuration reaches leave the bench's denominator with their reason."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dlcfuzz.synth.library import library
from dlcfuzz.synth.library_tvm import BUILD_PASSES, TVM_LIBRARY
from tests.test_synth import wrapped

pytest.importorskip("tvm", reason="apache-tvm is not installed")


@pytest.fixture(scope="module")
def tvm() -> Any:
    from dlcfuzz.backends import get_backend

    return get_backend("tvm")


@pytest.mark.parametrize("name", sorted(TVM_LIBRARY))
def test_each_written_pattern_fires_every_pass_it_is_tagged_with(tvm: Any, name: str) -> None:
    """The pattern between sigmoids, compiled by the configuration oatest makes for one target, changes the module in
    that pass: its own passes and the build pipeline's alike."""
    by = {p.name: p for p in library()}
    pattern = by[name]
    assert set(pattern.targets["tvm"]) == {*TVM_LIBRARY[name][1], *BUILD_PASSES}
    assert set(pattern.targets["tvm"]) <= set(tvm.optimizations())
    g = wrapped(pattern)
    missed = []
    for target in pattern.targets["tvm"]:
        _, config = tvm.oatest_configs(np.random.default_rng(0), [target], list(tvm.default_pair()))
        if not tvm.fired(g, config, [target])[target]:
            missed.append(target)
    assert not missed, missed


def test_a_pass_is_watched_under_the_name_its_pass_object_records(tvm: Any) -> None:
    """DecomposeOpsForInference runs as DecomposeOps and DataflowUseInplaceCalls as DataflowInsertInPlaceCalls; watched
    by the names of the functions that make them they fire (and a pattern without their form does not)."""
    from dlcfuzz.backends.tvm.trigger import instrument_name

    assert instrument_name("DecomposeOpsForInference") == "DecomposeOps"
    assert instrument_name("DataflowUseInplaceCalls") == "DataflowInsertInPlaceCalls"
    assert instrument_name("FuseOps") == "FuseOps" and instrument_name("ConvertToDataflow") == "ConvertToDataflow"
    by = {p.name: p for p in library()}
    targets = ["DecomposeOpsForInference"]
    _, config = tvm.oatest_configs(np.random.default_rng(0), targets, list(tvm.default_pair()))
    assert tvm.fired(wrapped(by["batch_norm_inference"]), config, targets) == {"DecomposeOpsForInference": True}
    assert tvm.fired(wrapped(by["cumsum_rows"]), config, targets) == {"DecomposeOpsForInference": False}


def test_the_written_reorder_take_pattern_fires_its_pass_through_the_oatest_worker(tvm: Any) -> None:
    """gather_columns_matmul spliced into a seed graph, run by the oatest worker handler: the test runs in both
    configurations and ReorderTakeAfterMatmul is recorded as fired."""
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.ir.blob import unpack
    from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes
    from dlcfuzz.strategies.oatest import make_handler
    from dlcfuzz.synth.synthesize import Synthesizer

    by = {p.name: p for p in library()}
    syn = Synthesizer([by["gather_columns_matmul"]], "tvm", retyped=False)
    rng = np.random.default_rng(3)
    s = syn.next(rng)
    assert s.pattern == "gather_columns_matmul"
    targets = ["ReorderTakeAfterMatmul"]
    configs = tvm.oatest_configs(rng, targets, list(tvm.default_pair()))
    tc = TestCase(s.graph, sample_inputs(s.graph, rng), configs, seed=3, compiler="tvm", strategy="oatest",
                  meta={"oatest": {"pattern": s.pattern, "targets": targets}})
    reply = make_handler({"compiler": "tvm"})(tc.to_bytes())
    obs, _, _, _ = reply_from_bytes(reply)
    assert [o.status for o in obs] == ["ok", "ok"], [o.error for o in obs]
    assert unpack(reply)[0]["oatest"]["fired"] == {"ReorderTakeAfterMatmul": True}


@pytest.mark.parametrize("target,form", [("LambdaLift", "closure"), ("InlinePrivateFunctions", None),
                                         ("RemoveUnusedParameters", None)])
def test_a_function_pass_target_outlines_private_functions_and_keeps_the_results(tvm: Any, target: str,
                                                                                 form: str | None) -> None:
    """A flat graph gives the function passes nothing: targeting one, the configuration lowers the graph with node
    ranges outlined into private sub-functions (closures for LambdaLift), the pass fires, and the optimized build
    computes what the unoptimized one does."""
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.oracle.testcase import TestCase

    by = {p.name: p for p in library()}
    g = wrapped(by["shape_only_read"])
    unopt, config = tvm.oatest_configs(np.random.default_rng(0), [target], list(tvm.default_pair()))
    assert config.options["outline_seed"] is not None and config.options.get("form") == form
    assert "outlined" in tvm.lower_key(config) and tvm.lower_key(unopt) == "direct"
    assert not g.functions and tvm.fired(g, config, [target]) == {target: True}
    obs = run_configs(tvm, TestCase(g, sample_inputs(g, np.random.default_rng(1)), [unopt, config], seed=1,
                                    compiler="tvm"))
    assert [o.status for o in obs] == ["ok", "ok"], [o.error for o in obs]
    assert all(np.array_equal(a, b) for a, b in zip(obs[0].outputs, obs[1].outputs, strict=True))


def test_out_of_reach_passes_are_listed_ones_with_a_reason(tvm: Any) -> None:
    listed, out = tvm.optimizations(), tvm.optimizations_out_of_reach()
    assert set(out) == {"DispatchSampling", "ComputePrimValue", "Normalize"}
    assert set(out) <= set(listed) and all(len(why) > 40 for why in out.values())
    # no written pattern claims one of them
    assert not {t for _, tags, _ in TVM_LIBRARY.values() for t in tags} & set(out)


def test_a_target_the_pipeline_runs_anyway_keeps_its_place(tvm: Any) -> None:
    """Drawn to the front of the sequence, LegalizeOps (or ToNonDataflow) would leave DecomposeOpsForInference no
    batch_norm to decompose: targets of OPTIMIZE and of relax.build's pipeline run where those put them, and the pass
    fires with them targeted too."""
    from dlcfuzz.backends.tvm.passes import OPTIMIZE

    targets = ["LegalizeOps", "ToNonDataflow", "DecomposeOpsForInference", "FuseTIR"]
    by = {p.name: p for p in library()}
    g = wrapped(by["batch_norm_inference"])
    for seed in range(6):
        _, config = tvm.oatest_configs(np.random.default_rng(seed), targets, list(tvm.default_pair()))
        assert config.options["passes"] == ["DecomposeOpsForInference", *OPTIMIZE]
        assert tvm.fired(g, config, targets) == dict.fromkeys(targets, True)


def test_a_region_pattern_is_judged_by_its_bodies_spliced_and_fires_convert_to_dataflow(tvm: Any) -> None:
    """branch_on_sum holds an If: the capability probe never answers for a region operator (it draws from
    `registry()`), so the synthesizer admits the pattern by its bodies' operators (and drops it when one of them is
    unsupported); spliced into seed graphs and run by the oatest worker, ConvertToDataflow fires and both
    configurations run."""
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.ir.blob import unpack
    from dlcfuzz.ops import registry
    from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes
    from dlcfuzz.strategies.oatest import make_handler
    from dlcfuzz.synth.synthesize import Synthesizer, pattern_supported

    probed = set(registry())
    assert "if" not in probed
    pattern = next(p for p in library() if p.name == "branch_on_sum")
    assert pattern_supported(pattern, lambda op, dt: op in probed)
    assert not pattern_supported(pattern, lambda op, dt: op in probed and op != "neg")  # the else branch's
    seed_ops = ("relu", "sigmoid", "add", "mul", "exp", "neg", "abs", "greater", "reduce_sum")
    syn = Synthesizer([pattern], "tvm", lambda op, dt: op in seed_ops, retyped=False)
    targets = ["ConvertToDataflow"]
    fired = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        s = syn.next(rng)
        assert s.pattern == "branch_on_sum" and any(n.op == "if" for n in s.graph.nodes)
        configs = tvm.oatest_configs(rng, targets, list(tvm.default_pair()))
        tc = TestCase(s.graph, sample_inputs(s.graph, rng), configs, seed=seed, compiler="tvm", strategy="oatest",
                      meta={"oatest": {"pattern": s.pattern, "targets": targets}})
        reply = make_handler({"compiler": "tvm"})(tc.to_bytes())
        obs, _, _, _ = reply_from_bytes(reply)
        assert [o.status for o in obs] == ["ok", "ok"], [o.error for o in obs]
        fired.append(unpack(reply)[0]["oatest"]["fired"]["ConvertToDataflow"])
    assert all(fired), fired


IF_THEN_MATMUL = '''
import sys
import numpy as np
import tvm
from tvm import relax
from tvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((18,), dtype="int32"), w: R.Tensor((6, 4), dtype="int32"),
             a: R.Tensor((3, 6), dtype="int32")) -> R.Tensor(OUT_SHAPE, dtype="int32"):
        if c:
            with R.dataflow():
                p: R.Tensor((24,), dtype="int32") = R.nn.pad(x, pad_width=[0, 6], pad_value=0.0, pad_mode="replicate")
                gv: R.Tensor((6, 4), dtype="int32") = R.reshape(p, R.shape([6, 4]))
                R.output(gv)
            y: R.Tensor((6, 4), dtype="int32") = gv
        else:
            with R.dataflow():
                p: R.Tensor((24,), dtype="int32") = R.nn.pad(x, pad_width=[0, 6], pad_value=0.0, pad_mode="replicate")
                gv: R.Tensor((6, 4), dtype="int32") = R.reshape(p, R.shape([6, 4]))
                R.output(gv)
            y: R.Tensor((6, 4), dtype="int32") = gv
        with R.dataflow():
            z: R.Tensor((6, 4), dtype="int32") = R.add(w, y)
            m: R.Tensor(OUT_SHAPE, dtype="int32") = LAST
            R.output(m)
        return m

vm = relax.VirtualMachine(relax.build(Module, target="llvm"), tvm.cpu())
args = [np.array(True), np.arange(18, dtype="int32"), np.ones((6, 4), "int32"), np.ones((3, 6), "int32")]
print(vm["main"](*[tvm.runtime.tensor(v) for v in args]).numpy().sum())
'''


def test_registered_memory_planning_across_if_branches_crashes_and_is_known(tvm: Any, tmp_path: Any) -> None:
    """tvm-static-plan-memory-if-branches (known upstream, apache/tvm#20191), with TVM alone in a subprocess: an if
    whose branches end in a pad-then-reshape dataflow block, then add and matmul, segfaults when run; the same
    function without the matmul (the add alone after the if) runs. The register names the crash."""
    import signal
    import subprocess
    import sys

    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    def run(last_step: str) -> subprocess.CompletedProcess:
        script = tmp_path / "if_then_matmul.py"  # TVMScript's parser reads the function's source from its file
        shape = "(3, 4)" if "matmul" in last_step else "(6, 4)"
        script.write_text(IF_THEN_MATMUL.replace("LAST", last_step).replace("OUT_SHAPE", shape))
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)

    crashed = run("R.matmul(a, z)")
    assert crashed.returncode == -signal.SIGSEGV, (crashed.returncode, crashed.stderr[-500:])
    fine = run("z")  # the if's add alone after it runs (pad keeps the last value: 17)
    want = int(np.sum(np.concatenate([np.arange(18), np.full(6, 17)]) + 1))
    assert fine.returncode == 0 and fine.stdout.split()[-1] == str(want), fine.stderr[-500:]
    key = "crash|tvm|run|SIGSEGV|AllocTensor"
    for ops, expected in (({"if", "pad", "matmul"}, "tvm-static-plan-memory-if-branches"), ({"pad", "matmul"}, None)):
        f = FindingFacts(1, "tvm", "crash", ("tvm-oatest",), "", frozenset(ops), frozenset({"int32"}), "", key, "")
        k = Register(use_env=False).match(f, "killed by signal 11 (SIGSEGV) ... StorageObj::AllocTensor")
        assert (k.id if k else None) == expected, k
