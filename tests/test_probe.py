"""The capability probe's group testing answers exactly what one compile per (operator, dtype) answers."""

from __future__ import annotations

import pytest

from dlcfuzz.strategies.probe import probe, probe_cases, side_by_side


def test_side_by_side_keeps_each_part_apart():
    cases = probe_cases()[:5]
    g = side_by_side([c[2] for c in cases])
    g.check()
    assert len(g.nodes) == sum(len(c[2].nodes) for c in cases)
    assert len(g.outputs) == sum(len(c[2].outputs) for c in cases)


def test_batched_probe_equals_the_one_by_one_probe_on_onnxruntime():
    pytest.importorskip("onnxruntime")
    from dlcfuzz.backends import get_backend

    backend = get_backend("onnxruntime")
    configs = [backend.default_pair()[0]]
    single = probe(backend, configs, batch=1)
    batched = probe(backend, configs, batch=16)
    assert set(single) == set(batched)
    differ = {k: (single[k], batched[k]) for k in single if single[k][0] != batched[k][0]}
    assert not differ, differ
    assert sum(not ok for ok, _ in single.values()) >= 10  # the split path ran: some pairs are unsupported
