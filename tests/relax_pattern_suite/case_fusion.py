"""Operator fusion and constant folding on small Relax modules."""

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed")
import tvm_ffi  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402


@I.ir_module
class MatmulAddRelu:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 6), "float32"), b: R.Tensor((6,), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, b)
            r = R.nn.relu(z)
            R.output(r)
        return r


@I.ir_module
class ConvRelu:
    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")):
        with R.dataflow():
            y = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            r = R.nn.relu(y)
            R.output(r)
        return r


@I.ir_module
class GeluErf:
    @R.function
    def main(x: R.Tensor((2, 16), "float32")):
        with R.dataflow():
            d = R.divide(x, R.const(1.4142135, "float32"))
            e = R.erf(d)
            one = R.add(e, R.const(1.0, "float32"))
            m = R.multiply(x, one)
            y = R.multiply(m, R.const(0.5, "float32"))
            R.output(y)
        return y


def fused_functions(mod):
    return [gv for gv, f in mod.functions.items() if isinstance(f, relax.Function) and "Primitive" in (f.attrs or {})]


@pytest.mark.parametrize("mod", [MatmulAddRelu, ConvRelu, GeluErf], ids=["matmul_add_relu", "conv_relu", "gelu_erf"])
def test_fuse_ops_groups_the_chain(mod):
    legal = relax.transform.LegalizeOps()(mod)
    annotated = relax.transform.AnnotateTIROpPattern()(legal)
    fused = relax.transform.FuseOps()(annotated)
    assert len(fused_functions(fused)) >= 1


def test_fold_constant_folds_constant_arithmetic():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((3, 4), "float32")):
            with R.dataflow():
                k = R.multiply(R.const(np.full((4,), 2.0, "float32")), R.const(0.5, "float32"))
                y = R.add(x, k)
                R.output(y)
            return y

    folded = relax.transform.FoldConstant()(relax.transform.LegalizeOps()(Mod))
    assert not tvm_ffi.structural_equal(folded, relax.transform.LegalizeOps()(Mod))
