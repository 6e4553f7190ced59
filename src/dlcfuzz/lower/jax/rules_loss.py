"""JAX lowering rules of the loss operators (ops/loss.py): the loss written out with jnp (JAX has no
NLL operator); targets gather their class with take_along_axis, ignored ones weigh 0."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types


def _nll(e: Emitter, scores: str, ins: list[str], attrs: dict, in_types: Types) -> str:
    c = in_types[0].shape[1]
    t = e.bind(f"{ins[1]}.astype(jnp.int64)", "target")
    ii = attrs["ignore_index"]
    keep = e.bind("jnp.ones_like(" + t + ", dtype=bool)" if ii is None else f"{t} != {literal(ii)}", "keep")
    safe = e.bind(f"jnp.clip({t}, 0, {c - 1})", "safe")
    picked = e.bind(f"jnp.take_along_axis({scores}, jnp.expand_dims({safe}, 1), axis=1).squeeze(1)", "picked")
    dt = f"{scores}.dtype"
    w = f"jnp.take({ins[2]}, {safe})" if len(ins) == 3 else f"jnp.ones({safe}.shape, {dt})"
    w = e.bind(f"jnp.where({keep}, {w}, jnp.zeros((), {dt}))", "w")
    loss = e.bind(f"-{picked} * {w}", "loss")
    if attrs["reduction"] == "none":
        return loss
    if attrs["reduction"] == "sum":
        return f"jnp.sum({loss})"
    return f"jnp.sum({loss}) / jnp.sum({w})"


@TARGET.register("negative_log_likelihood_loss")
def negative_log_likelihood_loss(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                                 out_types: Types) -> list[str]:
    return [_nll(e, ins[0], ins, attrs, in_types)]


@TARGET.register("softmax_cross_entropy_loss")
def softmax_cross_entropy_loss(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                               out_types: Types) -> list[str]:
    logp = e.bind(f"jax.nn.log_softmax({ins[0]}, axis=1)", "logp")
    return [_nll(e, logp, ins, attrs, in_types)] + ([logp] if attrs["log_prob"] else [])
