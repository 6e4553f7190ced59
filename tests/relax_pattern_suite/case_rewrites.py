"""Algebraic and layout rewrites of Relax's dataflow passes."""

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed")
import tvm_ffi  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402


def changed(pass_, mod):
    out = pass_(mod)
    return not tvm_ffi.structural_equal(out, mod)


def test_combine_parallel_matmul():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4, 8), "float32"), w1: R.Tensor((8, 3), "float32"), w2: R.Tensor((8, 5), "float32")):
            with R.dataflow():
                a = R.matmul(x, w1)
                b = R.matmul(x, w2)
                c = R.sum(a, axis=[1], keepdims=True)
                d = R.sum(b, axis=[1], keepdims=True)
                e = R.add(c, d)
                R.output(e)
            return e

    assert changed(relax.transform.CombineParallelMatmul(), Mod)


def test_reorder_permute_dims_after_concat():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3, 4), "float32"), y: R.Tensor((2, 5, 4), "float32")):
            with R.dataflow():
                a = R.permute_dims(x, [0, 2, 1])
                b = R.permute_dims(y, [0, 2, 1])
                c = R.concat((a, b), axis=2)
                R.output(c)
            return c

    assert changed(relax.transform.ReorderPermuteDimsAfterConcat(), Mod)


def test_remove_redundant_reshape():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3, 4), "float32")):
            with R.dataflow():
                a = R.reshape(x, (6, 4))
                b = R.reshape(a, (4, 6))
                c = R.exp(b)
                R.output(c)
            return c

    assert changed(relax.transform.RemoveRedundantReshape(), Mod)


def test_eliminate_common_subexpr():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((3, 4), "float32")):
            with R.dataflow():
                a = R.sigmoid(x)
                b = R.sigmoid(x)
                c = R.add(a, b)
                R.output(c)
            return c

    assert changed(relax.transform.EliminateCommonSubexpr(), Mod)


def test_expand_matmul_of_sum():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((3, 6), "float32"), w1: R.Tensor((6, 4), "float32"), w2: R.Tensor((6, 4), "float32")):
            with R.dataflow():
                w = R.add(w1, w2)
                y = R.matmul(x, w)
                R.output(y)
            return y

    assert changed(relax.transform.ExpandMatmulOfSum(), Mod)


def test_adjust_matmul_order():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((16, 2), "float32"), a: R.Tensor((2, 16), "float32"), b: R.Tensor((16, 1), "float32")):
            with R.dataflow():
                xa = R.matmul(x, a)
                y = R.matmul(xa, b)
                R.output(y)
            return y

    assert changed(relax.transform.AdjustMatmulOrder(), Mod)
