"""Inductor's attention fusions traced for training with dropout, as seeds (backends/inductor/pattern_seeds.py) on the
real torch 2.13: torch traced them with its random decompositions, which only `fallback_random=False` leaves in the
graph, so such a seed compiles with it (`PatternSeed.draws_dropout`); then the training rewrite fires and the seed,
judged by shapes and dtypes (eager and compiled draw differently), passes; with `fallback_random=True`, as every
other compile, it does not fire. Compiles: two training compiles."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the inductor backend needs torch (pip install 'dlcfuzz[inductor]')")

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.inductor.pattern_seeds import _batched, make_inputs, pattern_seeds, run_batch  # noqa: E402
from dlcfuzz.backends.inductor.patterns import recording_fired  # noqa: E402

NAMES = ("_sfdp_pattern_7", "_sfdp_pattern_9")


@pytest.fixture(scope="module")
def dropout_seeds():
    chosen = [next(s for s in pattern_seeds() if s.name == name and s.variant == "float16 registered training")
              for name in NAMES]
    assert all(s.draws_dropout and s.random and dict(s.kwargs)["dropout_p"] > 0 for s in chosen)
    return chosen


def test_a_dropout_training_seed_compiles_with_torch_random_and_fires_its_training_rewrite(dropout_seeds):
    assert dropout_seeds[0].compile_knobs() == {"fallback_random": False}
    assert dropout_seeds[0].kind == dropout_seeds[1].kind  # one batch
    runs = run_batch(get_backend("inductor"), dropout_seeds, np.random.default_rng(0))
    assert [r.verdict for r in runs] == ["ok", "ok"], [r.detail[:300] for r in runs]
    fired = set(runs[0].fired)
    assert {f"fuse_attention.{n}_half_training" for n in NAMES} <= fired, sorted(fired)
    assert "replace_random.replace_random" in fired  # the random decompositions the patterns were traced with


def test_with_fallback_random_the_dropout_training_rewrite_does_not_fire(dropout_seeds):
    seed = dropout_seeds[0]
    inputs = make_inputs(seed, np.random.default_rng(0))
    with recording_fired() as fired:
        get_backend("inductor").compile_function(_batched([seed]), inputs, grad=True)
    assert "fuse_attention._sfdp_pattern_7_half_training" not in fired
