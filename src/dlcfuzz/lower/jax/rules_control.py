"""Regions (ops/regions.py) in JAX: `lax.cond`, `lax.while_loop` (a loop without scan outputs), `lax.scan`
(a loop's scan outputs, over its static `trips`; a scan). Each body is a nested function of its parameters
returning the tuple of its outputs (`Emitter.function`). A loop with scan outputs and a computed trip count
(`max_trips`: their leading extent is data-dependent) is a documented gap, as NonZero is (rules_data_shape.py):
lax.scan's length and every shape under jit are static, and a padded fixed-length form is another output than
ONNX's."""

from __future__ import annotations

from typing import Any

from dlcfuzz.errors import LoweringGap
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.registry import target

JAX = target("jax")
COMPUTED_TRIPS_GAP = ("loop: scan outputs of a computed trip count have a data-dependent extent; XLA compiles static "
                      "shapes only (lax.scan's length is a Python int, and a padded fixed-length form is not ONNX's "
                      "output)")


def _unpack(e: Emitter, expr: str, n: int) -> list[str]:
    t = e.bind(expr, "r")
    return [f"{t}[{k}]" for k in range(n)]


@JAX.register("if")
def _if(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    then, other = e.function(attrs["then_branch"], "then_"), e.function(attrs["else_branch"], "else_")
    caps = "".join(f", {c}" for c in ins[1:])
    return _unpack(e, f"lax.cond({ins[0]}.reshape(()), {then}, {other}{caps})", len(outs))


@JAX.register("loop")
def _loop(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    k = int(attrs["num_carried"])
    if "max_trips" in attrs:
        raise LoweringGap(COMPUTED_TRIPS_GAP)
    body = e.function(attrs["body"], "loop_")
    caps = "".join(f", {c}" for c in ins[2 + k:])
    carried = "".join(f"{c}, " for c in ins[2:2 + k])
    trips, go = f"{ins[0]}.reshape(())", f"{ins[1]}.reshape(())"
    if len(outs) == k:  # no scan outputs: while the trip count and the condition allow
        step = e.fresh("step")
        e.lines += [f"def {step}(s):",
                    f"    r = {body}(s[0], s[1], *s[2:]{caps})",
                    "    return (s[0] + 1, r[0].reshape(()), *r[1:])"]
        state = e.bind(f"lax.while_loop(lambda s: (s[0] < {trips}) & s[1], {step}, "
                       f"(jnp.array(0, dtype=jnp.int64), {go}, {carried}))", "s")
        return [f"{state}[{2 + j}]" for j in range(k)]
    # scan outputs: exactly `trips` trips (the reference refuses a loop that runs another number)
    step = e.fresh("step")
    e.lines += [f"def {step}(s, i):",
                f"    r = {body}(i, s[0], *s[1:]{caps})",
                f"    return (r[0].reshape(()), *r[1:{1 + k}]), r[{1 + k}:]"]
    res = e.bind(f"lax.scan({step}, ({go}, {carried}), jnp.arange({int(attrs['trips'])}, dtype=jnp.int64))", "s")
    return [f"{res}[0][{1 + j}]" for j in range(k)] + [f"{res}[1][{j}]" for j in range(len(outs) - k)]


@JAX.register("scan")
def _scan(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    n, m = int(attrs["num_states"]), int(attrs["num_scan_inputs"])
    body = e.function(attrs["body"], "scan_")
    caps = "".join(f", {c}" for c in ins[n + m:])
    xs = []
    for x, t, ax, d in zip(ins[n:n + m], in_types[n:n + m], attrs["scan_input_axes"], attrs["scan_input_directions"]):
        moved = f"jnp.moveaxis({x}, {ax % t.rank}, 0)"
        xs.append(f"jnp.flip({moved}, 0)" if d else moved)
    step = e.fresh("step")
    e.lines += [f"def {step}(s, x):",
                f"    r = {body}(*s, *x{caps})",
                f"    return tuple(r[:{n}]), r[{n}:]"]
    states = "".join(f"{s}, " for s in ins[:n])
    res = e.bind(f"lax.scan({step}, ({states}), ({''.join(f'{x}, ' for x in xs)}))", "s")
    result = [f"{res}[0][{j}]" for j in range(n)]
    for j, (t, ax, d) in enumerate(zip(out_types[n:], attrs["scan_output_axes"], attrs["scan_output_directions"])):
        y = f"{res}[1][{j}]"
        y = f"jnp.flip({y}, 0)" if d else y
        result.append(f"jnp.moveaxis({y}, 0, {ax % t.rank})")
    return result
