"""Deduplication signatures: what only names one program's values is masked, what names the bug is not."""

from __future__ import annotations

from dlcfuzz.oracle.signature import digest, error_key, normalize

TVM = ("TypeError: Binary operators must have the same datatype for both operands. However, "
       "R.subtract(R.const(1, \"{dt}\"), {var}) uses datatype T.{dt} on the LHS (Type of {var}: float16)")


def test_value_names_and_numbers_do_not_split_a_finding():
    a = error_key(TVM.format(var="lv8", dt="float32"))
    b = error_key(TVM.format(var="lv1", dt="float32"))
    assert a == b and digest(a) == digest(b)
    assert normalize("at 0x7f3a12 in /opt/x/y.cc:83 node v12") == normalize("at 0x55aa in /tmp/z.cc:7 node v3")


def test_dtypes_and_operators_still_split():
    assert error_key(TVM.format(var="lv8", dt="float32")) != error_key(TVM.format(var="lv8", dt="float64"))
    assert normalize("int8 not supported") != normalize("int16 not supported")
    assert normalize("R.add failed") != normalize("R.subtract failed")
