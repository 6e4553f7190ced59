"""Loss operators: negative log-likelihood, softmax cross-entropy.

Inputs in our IR: scores x of shape (N, C, d1, ..., dk), target (N, d1, ..., dk) of int32/int64 class
indices, then an optional per-class weight (C,). attrs: reduction ("none", "sum", "mean"),
ignore_index (an int, or None: no target is ignored); SoftmaxCrossEntropyLoss also has log_prob (0/1:
whether its second output, log_softmax(x, axis=1), is present).

A target must be in [0, C) or equal ignore_index (anything else is undefined behaviour), so the target
is a strict-domain input. "mean" divides by the summed weights of the targets not ignored (their count
without weights), and "mean" gets positive weights. Under "mean" some targets are ignored as under the other
reductions; where all of them are (the targets' draw, or one class), the spec's function body divides 0 by 0:
NaN, as onnx.reference returns, and a test whose reference is not finite is not judged (an unknown).
References compute in float64 and round once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops.base import (
    ANY,
    POSITIVE,
    Attrs,
    Domain,
    OpSpec,
    check_size,
    register,
    require_dtype,
    summed_roundings,
)

REDUCTIONS = ("none", "sum", "mean")
TARGET_DTYPES = ("int32", "int64")
F16_MAX_TERMS = 16  # float16 sums of more terms round differently between compilers' orders
FAR_IGNORE_INDEX = -100  # PyTorch's default: a class index no target takes


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


class LossOp(OpSpec):
    """NegativeLogLikelihoodLoss (log_softmax=False) or SoftmaxCrossEntropyLoss (True)."""

    family = "loss"
    n_inputs = -1  # x, target, optional weight
    dtypes = FLOATS
    ranks = (2, 3, 4)

    def __init__(self, name: str, onnx_op: str, log_softmax: bool) -> None:
        self.name = name
        self.onnx_ops = (onnx_op,)
        self.log_softmax = log_softmax

    # ---- typing --------------------------------------------------------
    def _check(self, ins: Sequence[TensorType], attrs: Attrs) -> tuple[TensorType, TensorType]:
        if len(ins) not in (2, 3):
            raise ShapeError(f"{self.name}: expects scores, target and an optional weight, got {len(ins)} inputs")
        x, target = ins[0], ins[1]
        require_dtype(self, x)
        require_dtype(self, target, TARGET_DTYPES, what="target")
        if x.rank < 2:
            raise ShapeError(f"{self.name}: scores must have rank >= 2 (N, C, ...), got {x.shape}")
        if target.shape != x.shape[:1] + x.shape[2:]:
            raise ShapeError(f"{self.name}: target shape {target.shape} is not {x.shape[:1] + x.shape[2:]}")
        if len(ins) == 3:
            if ins[2].dtype != x.dtype:
                raise DTypeError(f"{self.name}: weight dtype {ins[2].dtype} differs from {x.dtype}")
            if ins[2].shape != (x.shape[1],):
                raise ShapeError(f"{self.name}: weight shape {ins[2].shape} is not ({x.shape[1]},)")
        if attrs.get("reduction") not in REDUCTIONS:
            raise ShapeError(f"{self.name}: reduction must be one of {REDUCTIONS}, got {attrs.get('reduction')!r}")
        ii = attrs.get("ignore_index")
        if ii is not None and not _is_int(ii):
            raise ShapeError(f"{self.name}: ignore_index must be an int or None, got {ii!r}")
        if self.log_softmax and attrs.get("log_prob") not in (0, 1):
            raise ShapeError(f"{self.name}: log_prob must be 0 or 1, got {attrs.get('log_prob')!r}")
        return x, target

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        x, target = self._check(ins, attrs)
        loss = TensorType(x.dtype, target.shape if attrs["reduction"] == "none" else ())
        return [loss, x] if self.log_softmax and attrs["log_prob"] else [loss]

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if index == 1:
            c = ins[0].shape[1] if ins[0].rank >= 2 else 1
            ii = attrs.get("ignore_index")
            lo, hi = 0, c - 1
            # an ignore_index just outside [0, C) joins the range, so that some targets are ignored
            if ii in (-1, c):
                lo, hi = min(lo, ii), max(hi, ii)
            return Domain(lo=lo, hi=hi, strict=True)
        if index == 2 and attrs.get("reduction") == "mean":
            return POSITIVE  # the divisor, a sum of weights, stays away from zero
        return ANY

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2 or first.shape[1] == 0:
            raise ShapeError(f"{self.name}: scores need rank >= 2 and at least one class, got {first.shape}")
        c = first.shape[1]
        target = TensorType(str(rng.choice(TARGET_DTYPES)), first.shape[:1] + first.shape[2:])
        reduction = str(rng.choice(REDUCTIONS))
        if first.dtype == "float16" and reduction != "none" and target.size > F16_MAX_TERMS:
            reduction = "none"
        u = rng.random()
        if u < 0.3:
            ii: int | None = None
        elif u < 0.6 and (reduction != "mean" or c > 1):  # under mean one class, every target, would be 0/0
            ii = int(rng.integers(0, c))
        else:
            ii = int(rng.choice([-1, c, FAR_IGNORE_INDEX]))
        ins = [first, target]
        if rng.random() < 0.5:
            ins.append(TensorType(first.dtype, (c,)))
        attrs: Attrs = {"reduction": reduction, "ignore_index": ii}
        if self.log_softmax:
            attrs["log_prob"] = int(rng.integers(0, 2))
        for t in self.infer(ins, attrs):
            check_size(self, t.shape)
        return ins, attrs

    # ---- semantics -----------------------------------------------------
    def _terms(self, xs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(-log-probability of each target's class, the weight of each target (0 where ignored),
        log_softmax(x) or None), in float64."""
        x = np.asarray(xs[0], dtype=np.float64)
        target = np.asarray(xs[1]).astype(np.int64)
        c = x.shape[1]
        ii = attrs.get("ignore_index")
        ignored = target == ii if ii is not None else np.zeros(target.shape, dtype=bool)
        if np.any(~ignored & ((target < 0) | (target >= c))):
            raise ValueError(f"{self.name}: a target outside [0, {c}) that is not ignore_index {ii}")
        safe = np.where(ignored, 0, target)
        logp = None
        if self.log_softmax:
            m = np.max(x, axis=1, keepdims=True)
            logp = x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))
            scores = logp
        else:
            scores = x
        picked = np.take_along_axis(scores, safe[:, None], axis=1)[:, 0]
        w = np.ones(target.shape) if len(xs) < 3 else np.asarray(xs[2], dtype=np.float64)[safe]
        w = np.where(ignored, 0.0, w)
        return -picked, w, logp

    def _reduce(self, terms: np.ndarray, w: np.ndarray, attrs: Attrs) -> np.ndarray:
        loss = terms * w
        if attrs["reduction"] == "none":
            return loss
        if attrs["reduction"] == "sum":
            return np.asarray(loss.sum())
        return np.asarray(loss.sum() / w.sum())  # all ignored: 0/0, NaN (the function body's, onnx.reference's)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        dtype = np.asarray(xs[0]).dtype
        terms, w, logp = self._terms(xs, attrs)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = [self._reduce(terms, w, attrs).astype(dtype)]
        if self.log_softmax and attrs["log_prob"]:
            out.append(np.asarray(logp).astype(dtype))
        return out

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        x = np.abs(np.asarray(xs[0], dtype=np.float64))
        # log_softmax rounds x - max(x) - log(sum) at the magnitude of the row's largest score, and log(sum) is off
        # by the relative error of a sum of C positive terms, which grows with C (summed_roundings): ORT's float64
        # loss over 13,862 classes, 2e10 through a weight of -2^31, was 2.5e-4 off, 528 epsilons of its log-sum
        c = x.shape[1]
        row = np.max(x, axis=1, keepdims=True) + np.log(max(c, 1)) + summed_roundings(c) if self.log_softmax else x
        if y.shape == x.shape:  # the log_prob output
            return np.broadcast_to(row + x, x.shape)
        target = np.asarray(xs[1]).astype(np.int64)
        safe = np.clip(target, 0, x.shape[1] - 1)
        term = np.take_along_axis(np.broadcast_to(row, x.shape) + x if self.log_softmax else x, safe[:, None], axis=1)[:, 0]
        _, w, _ = self._terms(xs, attrs)
        loss = term * np.abs(w)
        if attrs["reduction"] == "none":
            return loss
        # the targets' terms (of either sign: a weight may be negative) summed in some order
        total = loss.sum() * summed_roundings(target.size)
        if attrs["reduction"] == "sum":
            return np.asarray(total)
        # a quotient of two sums: both relative errors add up
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(total / np.abs(w.sum())
                              + np.abs(y) * (1.0 + summed_roundings(target.size) * np.abs(w).sum() / np.abs(w.sum())))


register(LossOp("negative_log_likelihood_loss", "NegativeLogLikelihoodLoss", log_softmax=False))
register(LossOp("softmax_cross_entropy_loss", "SoftmaxCrossEntropyLoss", log_softmax=True))
