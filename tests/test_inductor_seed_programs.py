"""Inductor's own replacement patterns spliced into generated PyTorch programs (issue 38 items 3 and 4) on the real
torch 2.13: a spliced program round-trips through the store's form, runs eagerly in every dtype variant, fires
its rewrite when compiled and agrees with eager, and its reproducer (plain torch: the search function imported
from torch by name) runs standalone; a planted fault in Inductor's replacement patterns is found by a small
campaign of spliced programs, and the same campaign on the correct Inductor is quiet. The campaign prefers
search functions whose rewrites have not fired yet, those fired up to a fixed lag before a test: two campaigns of
a seed with two jobs splice the same patterns. Compiles: one program, two 2-test campaigns and two 12-test
campaigns of one-statement programs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from program_harness import planted_finding_folder

torch = pytest.importorskip("torch", reason="the spliced patterns are Inductor's (torch)")

import inductor_planted_pattern  # noqa: E402,F401  (registers the planted compiler: workers import it too)
from dlcfuzz.backends.inductor.pattern_seeds import (  # noqa: E402
    choose_splice,
    pattern_names,
    splice_seeds,
    splice_statement,
)
from dlcfuzz.backends.inductor.programs import (  # noqa: E402
    DIALECT,
    OPS,
    checked_run,
    input_specs,
    make_inputs,
    reproducer,
    run_program,
    source_function,
    widened,
)
from dlcfuzz.engine.store import Store  # noqa: E402
from dlcfuzz.programs.core import Program, emit, generate  # noqa: E402
from dlcfuzz.strategies.programs import ProgramTest, judge_program  # noqa: E402

EAGER = ("eager", {"backend": "eager"})
CORRECT = ("inductor", {"backend": "inductor"})
SFDP_5 = "fuse_attention._sfdp_pattern_5_inference"


@pytest.fixture(scope="module", autouse=True)
def _campaign_workers_share_one_kernel_cache(tmp_path_factory):
    """The campaigns here compile the same programs twice (the planted fault's and the correct Inductor's; two
    campaigns of a seed): their workers share one Inductor cache folder, so g++ builds each kernel once
    (`compiling.shared_cache`); Inductor's passes, whose rewrites these tests read, run in every compile."""
    from dlcfuzz.backends.inductor.compiling import shared_cache

    with shared_cache(str(tmp_path_factory.mktemp("inductor-cache"))):
        yield


def spliced(seed_variant, rng_seed: int, n_stmts: int = 4) -> Program:
    return generate(DIALECT, np.random.default_rng(rng_seed), n_stmts,
                    first=lambda pool: [splice_statement(seed_variant, pool, "v0")])


def test_every_spliceable_variant_runs_eagerly_in_a_program():
    """One program per spliceable seed variant (every float dtype, registered and doubled sizes, a Python scale,
    inference and training variants; no compile): the store's form round-trips, eager runs it with its guards,
    and its float64 reference (the pattern widened) runs too."""
    seeds = splice_seeds()
    assert len({s.search for s in seeds}) >= 30
    assert {"float32", "float16", "bfloat16", "float64"} <= {s.dtype for s in seeds}
    failed = []
    for k, s in enumerate(seeds[::14]):
        p = spliced(s, k)
        assert Program.from_json(p.to_json()) == p and p.stmts[0].op == "pattern"
        try:
            if checked_run(p, make_inputs(input_specs(p), k)) is None:
                out = source_function(p)(*make_inputs(input_specs(p), k).values())
                wide = source_function(widened(p))(*make_inputs(input_specs(p), k).values())
                assert [o.shape for o in out] == [o.shape for o in wide]
        except Exception as e:  # noqa: BLE001 - what the assertion counts
            failed.append(f"{s.name} [{s.variant}]: {type(e).__name__}: {str(e)[:200]}")
    assert not failed, failed


def test_the_campaign_prefers_search_functions_whose_rewrites_have_not_fired():
    rng = np.random.default_rng(0)
    fired_all_but_sfdp_5 = {n for s in splice_seeds() for n in pattern_names(s) if "_sfdp_pattern_5_" not in n}
    chosen = [choose_splice(rng, fired_all_but_sfdp_5).name for _ in range(300)]
    # one function of 33 unfired, weighted 3: about 3/35 of the draws, against 1/33 without the preference
    assert 12 <= chosen.count("_sfdp_pattern_5") <= 50


def test_a_spliced_program_fires_its_rewrite_agrees_with_eager_and_its_reproducer_runs_standalone(tmp_path):
    seed = next(s for s in splice_seeds() if s.name == "_sfdp_pattern_5" and s.variant == "float32 registered inference")
    p = spliced(seed, 3)
    meta, arrays = run_program(p, 3, [EAGER, CORRECT])
    assert meta["runs"]["inductor"]["status"] == "ok", meta["runs"]
    assert SFDP_5 in meta["fired"]
    verdicts, _ = judge_program("inductor", ProgramTest(p, 3, [EAGER, CORRECT]), meta, arrays)
    assert [v.kind for v in verdicts] == ["pass"], verdicts
    script = tmp_path / "repro.py"
    script.write_text(reproducer(p, 3, [EAGER, CORRECT], "spliced", "", "torch"))
    source = script.read_text()
    assert "inductor_pattern('torch._inductor.fx_passes.fuse_attention:_sfdp_pattern_5')" in source
    assert "dlcfuzz" not in "\n".join(ln for ln in source.splitlines() if ln.startswith(("import", "from")))
    assert emit(p, OPS) in source
    res = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "not reproduced" in res.stdout, res.stdout + res.stderr


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory) -> dict[str, Path]:
    """The same 2 spliced tests (seed 6: _sfdp_pattern_2 with a Python scale and prepare_softmax_pattern, float32
    inference variants) against the planted fault and against the correct Inductor; no reduction."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    out = {}
    for compiler in ("inductor-planted-pattern", "inductor"):
        out[compiler] = tmp_path_factory.mktemp(compiler)
        Campaign(campaign_options(compiler=compiler, strategy="programs", splice=1.0, seconds=900, jobs=1, seed=6,
                                  out=out[compiler], quiet=True, max_tests=2, reduce=False)).run()
    return out


@pytest.mark.slow
def test_a_planted_fault_in_a_replacement_is_found_and_the_correct_inductor_is_quiet(campaigns):
    folder = planted_finding_folder(campaigns["inductor-planted-pattern"])
    assert "pattern" in (folder / "program.json").read_text()
    store = Store(campaigns["inductor"] / "store.sqlite", create=False)
    assert store.findings() == []
    assert store.first_fired(), "the correct campaign records the rewrites its tests fired"


def test_the_report_and_list_name_the_rewrites_the_campaign_s_tests_applied(campaigns, capsys):
    """Issue 39's Inductor half: the pattern-matcher rewrites a programs campaign's compiles applied (its trigger
    records, `auto`'s first-fired yield) are in its report and in `dlcfuzz list` too, as how many of the installed
    torch's (`Backend.applied_label`, `applied_universe`: the pattern inventory)."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.cli import main

    run = campaigns["inductor"]
    store = Store(run / "store.sqlite", create=False)
    applied = store.applied_counts()
    assert applied and set(applied) == {name for _, name in store.first_fired()}
    total = len(set(get_backend("inductor").applied_universe()) | set(applied))
    line = f"pattern-matcher rewrites applied: {len(applied)} of {total}"
    assert f"<h2>P{line[1:]}</h2>" in (run / "report.html").read_text()
    capsys.readouterr()
    assert main(["list", str(run)]) == 0
    assert line in capsys.readouterr().out


def test_some_tests_compile_with_freezing_or_the_split_cat_passes_and_the_dynamic_ones_are_drawn_as_before():
    rng = np.random.default_rng(0)
    drawn = [DIALECT.per_test_configs(rng, [EAGER, CORRECT])[1][0] for _ in range(500)]
    before = np.random.default_rng(0)
    assert [d == "inductor+dynamic" for d in drawn] == [before.random() < 0.3 for _ in range(500)]
    assert 50 <= drawn.count("inductor+freezing") <= 100  # 20% of the 70% not dynamic
    assert 50 <= drawn.count("inductor+fusions") <= 100  # 20% of the 70% not dynamic: the split/cat passes on


def test_a_low_precision_pattern_sets_the_least_float_tolerance():
    """A bfloat16 pattern's result reaches the oracle as float32 (and its gradients reach float32 inputs): eager and
    compiled differ by bfloat16's rounding, which float32's tolerance would call a bug (a 600 s bench run's one
    finding before the floor); a 1.5x error still is one."""
    from dlcfuzz.backends.inductor.programs import splice_tolerance
    from dlcfuzz.strategies.programs import compare_to_eager

    seed = next(s for s in splice_seeds() if s.name == "_sfdp_pattern_25" and s.variant == "bfloat16 registered training")
    floor = splice_tolerance(spliced(seed, 1))
    assert floor > 0.01 and splice_tolerance(spliced(splice_seeds()[0], 1)) in (0.0, 0.01, floor)
    f64 = np.linspace(-1, 1, 16)
    eager, compiled = (f64 + 0.0065).astype(np.float32), (f64 - 0.0172).astype(np.float32)
    assert compare_to_eager(compiled, eager, f64)[0] == "value"
    assert compare_to_eager(compiled, eager, f64, floor)[0] is None
    assert compare_to_eager((f64 * 1.5).astype(np.float32), eager, f64, floor)[0] == "value"


def test_two_campaigns_of_a_seed_with_two_jobs_splice_the_same_patterns(tmp_path):
    """Which pattern a spliced test gets depends on the rewrites fired before it: only those of the tests up to its
    horizon (LAG numbers before it), which it waits for, so two campaigns of the same seed with --jobs 2 (results
    coming back in an order the timing decides) splice the same patterns test by test; and the later tests had
    rewrites fired before their horizon to prefer against (the comparison is not vacuous)."""
    from dlcfuzz.backends.inductor.programs import pattern_searches
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.programs.core import decode_test
    from dlcfuzz.strategies.base import LAG

    n = LAG + 4
    spliced_by_seq, fired_at = [], []
    for run in ("first", "second"):
        out = tmp_path / run
        Campaign(campaign_options(compiler="inductor", strategy="programs", splice=1.0, stmts=1, seconds=900, jobs=2,
                                  seed=3, out=out, quiet=True, max_tests=n, reduce=False,
                                  configs=["eager", "inductor"])).run()
        store = Store(out / "store.sqlite", create=False)
        spliced_by_seq.append({seq: pattern_searches(decode_test(blob)[0]) for seq, blob in store.blobs_from(0)})
        fired_at.append([store.test_row(test_id)["seq"] for test_id, _ in store.first_fired()])
    assert sorted(spliced_by_seq[0]) == list(range(n)) and all(spliced_by_seq[0].values())
    assert spliced_by_seq[0] == spliced_by_seq[1]
    assert min(fired_at[0]) <= n - 1 - LAG, fired_at[0]
