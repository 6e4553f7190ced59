"""Inductor's freezing passes reached by what a campaign runs (issue 38 items 3 and 4), on the real torch 2.13: the
programs dialect's layers (linear, conv2d) read their weights as parameters, which the `+freezing` configuration
(knobs.FREEZING) folds as constants, so the freezing pattern passes (mkldnn weight packing, binary folding, the
concatenation of linears that share an input) and the post-grad mkldnn lowerings of a packed layer fire, and the
compiled program still agrees with eager (float64 reference); without freezing none of them fires. Torch's
freezing replacement patterns run as frozen seeds (their weights as parameters). Compiles: four programs, two seed
batches and one reproducer."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the freezing passes are Inductor's (torch)")

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.inductor.knobs import FREEZING, INDUCTOR_KNOBS  # noqa: E402
from dlcfuzz.backends.inductor.pattern_seeds import batches, pattern_seeds, run_batch  # noqa: E402
from dlcfuzz.backends.inductor.patterns import pattern_inventory  # noqa: E402
from dlcfuzz.backends.inductor.programs import DIALECT, OPS, reproducer, run_program  # noqa: E402
from dlcfuzz.programs.core import Input, Program, Stmt, emit, generate  # noqa: E402
from dlcfuzz.strategies.programs import ProgramTest, judge_program  # noqa: E402

EAGER = ("eager", {"backend": "eager"})
PLAIN = ("inductor", {"backend": "inductor"})
FROZEN = ("inductor+freezing", {"backend": "inductor", "knobs": dict(FREEZING)})
MKLDNN = "mkldnn_fusion._register_"
WEIGHT_PACK = {f"{MKLDNN}weight_pack_pass.<locals>.convolution", f"{MKLDNN}weight_pack_pass.<locals>.linear"}
BINARY_FOLDING = "binary_folding.binary_folding_init.<locals>.folded_op"
CONCAT_LINEAR = "freezing_patterns.addmm_patterns_init.<locals>.matmul_fuse_pattern"


def _layer(kind: str, x: str, out: str, weight: list[int], act: str | None, **attrs) -> Stmt:
    return Stmt(kind, [x], {"heads": 1, "bias": True, "seed": 7, "scale": None, "act": act, "weight": weight,
                            **({"padding": 1} if kind == "conv2d" else {}), **attrs}, out)


def layers_program() -> Program:
    """A convolution with a bias and a ReLU, one scaled (binary folding) and one followed by an add of another
    value (mkldnn's binary fusion) and a hardtanh; three linears of one input without bias (concatenated) and a
    linear with a bias and a GELU."""
    return Program(
        [Input("x0", "float32", (1, 3, 5, 5)), Input("x1", "float32", (4, 6))],
        [_layer("conv2d", "x0", "v0", [4, 3, 3, 3], "torch.relu({})", seed=11),
         _layer("conv2d", "x0", "v1", [4, 3, 3, 3], None, seed=21, scale=0.5),
         Stmt("operator", ["v1", "v0"], {"op": "+", "swap": False}, "v2"),
         Stmt("clamp", ["v2"], {"min": -1.0, "max": 1.0}, "v3"),
         _layer("linear", "x1", "v4", [5, 6], None, seed=31, heads=3, bias=False),
         _layer("linear", "x1", "v5", [3, 6], "torch.nn.functional.gelu({})", seed=41)],
        ["v0", "v3", "v4", "v5"])


def test_the_layers_spell_parameters_and_draw_in_generated_programs():
    p = layers_program()
    source = emit(p, OPS)
    assert "torch.nn.functional.conv2d(x0, w11.to(x0), b11.to(x0), padding=1)" in source
    assert "torch.stack((torch.nn.functional.linear(x1, w31.to(x1), None)" in source
    drawn = [s.op for k in range(300) for s in generate(DIALECT, np.random.default_rng(k), 8).stmts]
    assert drawn.count("linear") >= 10 and drawn.count("conv2d") >= 1
    assert INDUCTOR_KNOBS["cpp.enable_concat_linear"] == (True,)  # the graph strategies' sampled knobs draw it too


@pytest.fixture(scope="module")
def runs():
    p = layers_program()
    return p, {name: run_program(p, 5, [EAGER, cfg]) for name, cfg in (("plain", PLAIN), ("frozen", FROZEN))}


def test_freezing_fires_the_freezing_and_mkldnn_rewrites_and_agrees_with_eager(runs):
    p, by = runs
    inventory = pattern_inventory()
    meta, arrays = by["frozen"]
    assert meta["runs"]["inductor+freezing"]["status"] == "ok", meta["runs"]
    fired = set(meta["fired"])
    assert WEIGHT_PACK | {BINARY_FOLDING, CONCAT_LINEAR} <= fired, fired
    assert {inventory[n].gate for n in WEIGHT_PACK | {BINARY_FOLDING, CONCAT_LINEAR}} == {"freezing=True"}
    # the post-grad lowerings of a packed layer (default passes: they see a packed layer only after freezing)
    lowerings = {n for n in fired if n.startswith(MKLDNN) and "weight_pack" not in n}
    assert len(lowerings) >= 2 and {inventory[n].gate for n in lowerings} == {"default"}, fired
    verdicts, _ = judge_program("inductor", ProgramTest(p, 5, [EAGER, FROZEN]), meta, arrays)
    assert [v.kind for v in verdicts] == ["pass"], verdicts


def test_without_freezing_the_weights_stay_inputs_and_nothing_of_it_fires(runs):
    _, by = runs
    meta, _ = by["plain"]
    assert meta["runs"]["inductor"]["status"] == "ok"
    assert not {n for n in meta["fired"] if pattern_inventory()[n].gate == "freezing=True" or n.startswith(MKLDNN)}


def test_the_planted_relu_fault_shows_under_freezing():
    """The oracle is the programs strategy's (eager vs compiled, float64 reference); under freezing it still sees
    Inductor's planted accuracy fault in a ReLU kernel outside the packed layers."""
    p = Program([Input("x0", "float32", (2, 6))],
                [_layer("linear", "x0", "v0", [4, 6], None, seed=3), Stmt("relu", ["v0"], {}, "v1")], ["v1"])
    faulty = ("inductor-planted-accuracy", {"backend": "inductor", "knobs": dict(FREEZING), "fault": "accuracy"})
    meta, arrays = run_program(p, 1, [EAGER, faulty])
    assert f"{MKLDNN}weight_pack_pass.<locals>.linear" in meta["fired"]
    verdicts, _ = judge_program("inductor", ProgramTest(p, 1, [EAGER, faulty]), meta, arrays)
    assert verdicts[0].kind == "bug", verdicts


def test_a_layer_programs_reproducer_rebuilds_its_parameters_standalone(tmp_path):
    p = Program([Input("x0", "float32", (1, 2, 4, 4))],
                [_layer("conv2d", "x0", "v0", [3, 2, 3, 3], "torch.nn.functional.hardswish({})", seed=5)], ["v0"])
    script = tmp_path / "repro.py"
    script.write_text(reproducer(p, 2, [EAGER, FROZEN], "frozen layer", "", "torch"))
    source = script.read_text()
    assert "w5 = layer_weights([3, 2, 3, 3], 5)" in source and "'freezing': True" in source
    res = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "not reproduced" in res.stdout, res.stdout + res.stderr


def test_torchs_freezing_replacements_run_frozen_and_fire():
    """matmul_fuse_pattern (three matmuls of one input by constant weights) and its two-matmul form fire when their
    weights are parameters under knobs.FREEZING and agree with eager. addmm_fuse_pattern_second with the 2-D biases
    torch registered it with fails to compile: its replacement concatenates the biases along their first axis (a
    torch 2.13 bug, reproduced with torch alone: three torch.addmm of one input with 2-D bias parameters, freezing
    and cpp.enable_concat_linear on)."""
    backend = get_backend("inductor")
    names = ("matmul_fuse_pattern", "matmul_fuse_pattern_two", "addmm_fuse_pattern_second")
    seeds = [s for s in pattern_seeds() if s.name in names and s.variant == "float32 registered inference"]
    assert sorted(s.name for s in seeds) == sorted(names) and all(s.frozen for s in seeds)
    assert not any(s.frozen for s in pattern_seeds() if s.name == "_sfdp_pattern_1")
    (group,) = list(batches(seeds, 8))
    runs = {r.seed.name: r for r in run_batch(backend, group, np.random.default_rng(0))}
    for name in names[:2]:
        assert runs[name].verdict == "ok", runs[name].detail
        assert f"freezing_patterns.addmm_patterns_init.<locals>.{name}" in runs[name].fired
    assert runs[names[2]].verdict == "error" and "Attempting to broadcast" in runs[names[2]].detail
