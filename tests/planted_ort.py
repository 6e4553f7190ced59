"""ONNXRuntime with a planted fault in its optimized build, which compiles a rewritten model (tests/regions_plugin.py,
tests/data_shapes_plugin.py), and the small random campaign that finds one while the real compiler stays quiet."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend


class RewrittenOptimizedBuild(OnnxRuntimeBackend):
    """ONNXRuntime whose `ort-all` build of a graph that uses `rewrites_op` compiles the model `rewrite` changed."""

    rewrites_op: ClassVar[str]

    def rewrite(self, graph: Any) -> None:
        """Plant the fault in an onnx.GraphProto, in place."""
        raise NotImplementedError

    def probe_identity(self, config: Any) -> tuple[str, str]:
        return OnnxRuntimeBackend.name, self.version()  # the probe's answers are onnxruntime's

    def build(self, lowered: bytes, g: Any, config: Any) -> Any:
        if config.options.get("opt_level") == "all" and self.rewrites_op in g.ops_used():
            import onnx

            model = onnx.load_from_string(lowered)
            self.rewrite(model.graph)
            lowered = model.SerializeToString()
        return super().build(lowered, g, config)


def random_campaign(out: Path, compiler: str, only_ops: list[str], ops: int, max_tests: int, **options: Any) -> Any:
    """A random-strategy campaign of `max_tests` small tests (seed 3, small values and sizes); its store."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store

    Campaign(campaign_options(seconds=600, jobs=2, seed=3, out=out, quiet=True, compiler=compiler, reduce_budget_s=8,
                              strategy="random", ops=ops, only_ops=only_ops, values="small", sizes="small",
                              max_tests=max_tests, **options)).run()
    return Store(out / "store.sqlite", create=False)


def planted_found_and_real_quiet(out: Path, planted: str, only_ops: list[str], ops: int, max_tests: int,
                                 min_passes: int, **options: Any) -> list[dict]:
    """The same random campaign against the planted compiler and the real onnxruntime: the planted one's findings
    are wrong results (returned, for more checks), the real one finds nothing and passes `min_passes` tests."""
    found = random_campaign(out / "bad", planted, only_ops, ops, max_tests, **options).findings()
    assert found and all(f["category"] in ("inconsistency", "wrong-result") for f in found), found
    good = random_campaign(out / "good", "onnxruntime", only_ops, ops, max_tests, **options)
    assert good.findings(distinct_only=False) == []
    assert good.totals()["verdicts"].get("pass", 0) >= min_passes, good.totals()
    return found
