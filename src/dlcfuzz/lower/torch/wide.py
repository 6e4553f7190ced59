"""torch's unsigned integers without kernels: uint16/32/64 are storage dtypes only in torch (no
add/compare/shift kernels: "add_stub" not implemented for 'UInt32'), so rules compute them in int64,
exactly. uint16/32 values fit; uint64 values keep their bits (wrapping add/sub/mul/bitwise are the
same), and order by the int64 with the sign bit flipped."""

from __future__ import annotations

from dlcfuzz.lower.pysource.codegen import Emitter
from dlcfuzz.lower.pysource.rules import binary

_COMPARISONS = ("equal", "less", "less_equal", "greater", "greater_equal")

_SIGN_BIT = -(2**63)
_LOW63 = 2**63 - 1


def _wide_int64(e: Emitter, ins: list[str]) -> list[str]:
    return [e.bind(f"{x}.to(torch.int64)", "w") for x in ins]


def _wide_order(e: Emitter, x64: str, dtype: str) -> str:
    """An int64 whose signed order is the unsigned order of the value x64 holds."""
    return e.bind(f"{x64} ^ {_SIGN_BIT}", "o") if dtype == "uint64" else x64


def _wide_divmod(e: Emitter, a: str, b: str, dtype: str) -> tuple[str, str]:
    """Unsigned quotient and remainder of int64-held values (uint64: Hacker's Delight 9-3, since
    int64 division cannot see values of 2**63 and more)."""
    if dtype != "uint64":
        return f"torch.div({a}, {b}, rounding_mode='floor')", f"torch.remainder({a}, {b})"
    oa, ob = _wide_order(e, a, dtype), _wide_order(e, b, dtype)
    big = e.bind(f"{b} < 0")  # a divisor of 2**63 or more: the quotient is 0 or 1
    bs = e.bind(f"torch.where({big}, torch.ones_like({b}), {b})")
    q = e.bind(f"torch.div(({a} >> 1) & {_LOW63}, {bs}, rounding_mode='floor') << 1")
    r = e.bind(f"{a} - {q} * {bs}")
    q = e.bind(f"{q} + ((({r} ^ {_SIGN_BIT}) >= ({bs} ^ {_SIGN_BIT})).to(torch.int64))")
    q = e.bind(f"torch.where({big}, ({oa} >= {ob}).to(torch.int64), {q})")
    return q, f"({a} - {q} * {b})"


def wide_binary(e: Emitter, name: str, ins: list[str], attrs: dict, dtype: str) -> str:
    """The binary operator `name` of two uint16/32/64 operands, computed in int64."""
    x, y = _wide_int64(e, ins)
    back = f".to({e.sp.dtype(dtype)})"
    if name in ("add", "sub", "mul", "bitwise_and", "bitwise_or", "bitwise_xor"):
        return binary(e.sp, name, x, y) + back
    if name in _COMPARISONS:
        return binary(e.sp, name, _wide_order(e, x, dtype), _wide_order(e, y, dtype))
    if name in ("max", "min"):
        op = ">=" if name == "max" else "<="
        return f"torch.where({_wide_order(e, x, dtype)} {op} {_wide_order(e, y, dtype)}, {x}, {y}){back}"
    if name in ("div", "mod"):
        q, r = _wide_divmod(e, x, y, dtype)
        return (q if name == "div" else r) + back
    if name == "bit_shift":
        if attrs["direction"] == "LEFT":
            return f"torch.bitwise_left_shift({x}, {y}){back}"
        if dtype != "uint64":
            return f"torch.bitwise_right_shift({x}, {y}){back}"
        # a logical shift of the int64 bits: the first step clears the sign bit
        logical = f"torch.bitwise_right_shift(({x} >> 1) & {_LOW63}, torch.clamp_min({y} - 1, 0))"
        return f"torch.where({y} == 0, {x}, {logical}){back}"
    raise KeyError(name)


