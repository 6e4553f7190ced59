"""Deduplication signatures: what only names one program's values is masked, what names the bug is not."""

from __future__ import annotations

from dlcfuzz.oracle.signature import digest, error_key, normalize

TVM = ("TypeError: Binary operators must have the same datatype for both operands. However, "
       "R.subtract(R.const(1, \"{dt}\"), {var}) uses datatype T.{dt} on the LHS (Type of {var}: float16)")


def test_value_names_and_numbers_do_not_split_a_finding():
    a = error_key(TVM.format(var="lv8", dt="float32"))
    b = error_key(TVM.format(var="lv1", dt="float32"))
    assert a == b and digest(a) == digest(b)
    assert normalize("at 0x7f3a12 in /opt/x/pad.cc:83 node v12") == normalize("at 0x55aa in /src/y/pad.cc:7 node v3")


def test_onnxruntime_status_is_keyed_without_the_failing_node():
    """A wrong shape upstream fails in whichever kernel reuses its buffer (ORT 1.16's empty-axes Reduce)."""
    msg = ("RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while "
           "running {op} node. Name:'_{op}1' Status Message: /onnxruntime_src/onnxruntime/core/framework/"
           "op_kernel.cc:83 virtual OrtValue* onnxruntime::OpKernelContext::OutputMLValue() status.IsOK() was false. "
           "Shape mismatch attempting to re-use buffer. {{1,1}} != {{2,6}}.")
    assert error_key(msg.format(op="Tan")) == error_key(msg.format(op="Erf"))
    other = msg.format(op="Pad").replace("framework/op_kernel.cc", "providers/cpu/tensor/pad.cc")
    assert error_key(other) != error_key(msg.format(op="Tan"))


def test_dtypes_and_operators_still_split():
    assert error_key(TVM.format(var="lv8", dt="float32")) != error_key(TVM.format(var="lv8", dt="float64"))
    assert normalize("int8 not supported") != normalize("int16 not supported")
    assert normalize("R.add failed") != normalize("R.subtract failed")
    assert normalize("/src/a/pad.cc:3 failed") != normalize("/src/a/reshape_helper.h:3 failed")
