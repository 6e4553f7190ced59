"""Operators whose output extent depends on their input values: NonZero, Unique, Compress with a computed condition,
NonMaxSuppression.

Each output axis whose extent the data decides is an unknown axis of its type (TensorType.unknown), holding its upper
bound: NonZero's count (at most the input's size), Unique's number of distinct values or slices (at most their count),
the number of true conditions (at most the condition's length), NonMaxSuppression's selected boxes (at most
batches x classes x the per-class limit). The reference resolves the extent when it runs; a
consumer takes such a type only where its rule says so (OpSpec.unknown_dims).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import DTYPES, TensorType
from dlcfuzz.ops.base import Attrs, OpSpec, register, require_arity, require_dtype
from dlcfuzz.ops.indexing import sample_compress_form
from dlcfuzz.ops.shape import _axis, _int, _maybe_negative


class DataShapeOp(OpSpec):
    family = "data_shape"
    dtypes = DTYPES
    ranks = (1, 2, 3, 4)


def _near_zero(x: np.ndarray, tol: float) -> bool:
    """A float element so close to zero that legal rounding may make it zero (or a zero computed otherwise not)."""
    return x.dtype.kind == "f" and bool(np.any((x != 0) & (np.abs(x) <= tol)))


# ---- non_zero --------------------------------------------------------------


class NonZero(DataShapeOp):
    """ONNX NonZero: the indices of the non-zero elements, int64[rank, count], in row-major order."""

    name = "non_zero"
    onnx_ops = ("NonZero",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank == 0:  # ONNX defines a scalar's as [0, count]; NumPy no longer indexes a scalar
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        return [TensorType("int64", (t.rank, t.size), (1,))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        self.infer([first], {})
        return [first], {}

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        return _near_zero(xs[0], tol)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.asarray(np.nonzero(xs[0]), dtype=np.int64).reshape(xs[0].ndim, -1)]


# ---- unique ----------------------------------------------------------------


class Unique(DataShapeOp):
    """ONNX Unique: the distinct elements (no `axis`: of the flattened input) or slices along `axis`, sorted
    ascending (`sorted` 1) or in order of first occurrence (0); outputs Y, indices (each one's first occurrence),
    inverse_indices (each element's or slice's position in Y: static, as long as the input) and counts."""

    name = "unique"
    n_outputs = 4
    onnx_ops = ("Unique",)
    dtypes = tuple(d for d in DTYPES if d != "bool")  # ONNX's kernels (and its reference) order numbers

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if _int(self, attrs, "sorted") not in (0, 1):
            raise ShapeError(f"{self.name}: sorted must be 0 or 1")
        if "axis" not in attrs:
            n = t.size
            y = TensorType(t.dtype, (n,), (0,))
        else:
            if t.rank == 0:
                raise ShapeError(f"{self.name}: an axis needs rank >= 1")
            a = _axis(self, _int(self, attrs, "axis"), t.rank)
            n = t.shape[a]
            y = TensorType(t.dtype, t.shape, (a,))
        count = TensorType("int64", (n,), (0,))
        return [y, count, TensorType("int64", (n,)), count]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        attrs: Attrs = {"sorted": int(rng.random() < 0.6)}
        if first.rank and rng.random() < 0.5:
            attrs["axis"] = _maybe_negative(rng, int(rng.integers(first.rank)), first.rank)
        self.infer([first], attrs)
        return [first], attrs

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """Two distinct float values within the tolerance: legal rounding may merge them (or part two equal ones)."""
        x = xs[0]
        if x.dtype.kind != "f" or x.size < 2:
            return False
        v = np.unique(x.astype(np.float64))
        return bool(np.any(np.diff(v) <= tol * np.maximum(1.0, np.abs(v[1:]))))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axis = None if "axis" not in attrs else int(attrs["axis"]) % max(x.ndim, 1)
        y, first, inverse, counts = np.unique(x.reshape(-1) if axis is None else x, return_index=True,
                                              return_inverse=True, return_counts=True, axis=axis)
        inverse = inverse.reshape(-1)
        if not attrs["sorted"]:  # in order of first occurrence
            order = np.argsort(first, kind="stable")
            y = np.take(y, order, axis=0 if axis is None else axis)
            first, counts = first[order], counts[order]
            inverse = np.argsort(order)[inverse]
        return [y.astype(x.dtype), *(np.asarray(a, dtype=np.int64) for a in (first, inverse, counts))]


# ---- compress_computed -----------------------------------------------------


class CompressComputed(DataShapeOp):
    """ONNX Compress whose condition is a tensor the graph computes (or reads): inputs x and a bool condition of
    length at most the axis's (absent axis: the flattened input's); the kept extent is the number of true elements.
    A condition known when the graph is built is `compress`'s attribute (ops/indexing.py), a static shape."""

    name = "compress_computed"
    n_inputs = 2
    onnx_ops = ("Compress",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t, cond = ins
        require_dtype(self, t)
        require_dtype(self, cond, ("bool",), what="condition")
        if t.rank == 0 or cond.rank != 1:
            raise ShapeError(f"{self.name}: input rank >= 1 and a 1-D condition, got {t.shape} and {cond.shape}")
        n = t.size if "axis" not in attrs else t.shape[_axis(self, _int(self, attrs, "axis"), t.rank)]
        if cond.shape[0] > n:
            raise ShapeError(f"{self.name}: condition of {cond.shape[0]} longer than {n}")
        if "axis" not in attrs:
            return [TensorType(t.dtype, cond.shape, (0,))]
        a = _axis(self, _int(self, attrs, "axis"), t.rank)
        return [TensorType(t.dtype, t.shape[:a] + cond.shape + t.shape[a + 1:], (a,))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        attrs, length = sample_compress_form(self, rng, first)
        ins = [first, TensorType("bool", (length,))]
        self.infer(ins, attrs)
        return ins, attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, cond = xs
        kept = np.flatnonzero(np.asarray(cond, dtype=bool))
        if "axis" not in attrs:
            return [x.reshape(-1)[kept]]
        return [np.take(x, kept, axis=int(attrs["axis"]))]


# ---- non_max_suppression ---------------------------------------------------


MAX_BOXES = 64  # generated: the reference's suppression and its near-tie check compare every pair of boxes in Python


class NonMaxSuppression(DataShapeOp):
    """ONNX NonMaxSuppression: inputs boxes [batches, boxes, 4] and scores [batches, classes, boxes]; per batch and
    class, the boxes by descending score (ties: the lower index first), each kept unless its IoU with one kept before
    exceeds `iou_threshold`, at most `max_output_boxes_per_class`, only those scoring above `score_threshold` where it
    is given. Output int64[selected, 3]: (batch, class, box) rows. The three thresholds, ONNX inputs, are attributes
    here (as Compress's condition is): they decide the output's bound. `center_point_box` 0: boxes are two corners
    [y1, x1, y2, x2] in any order; 1: [x_center, y_center, width, height]."""

    name = "non_max_suppression"
    n_inputs = 2
    onnx_ops = ("NonMaxSuppression",)
    dtypes = ("float32",)
    ranks = (3,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        boxes, scores = ins
        require_dtype(self, boxes)
        require_dtype(self, scores, what="scores")
        if boxes.rank != 3 or boxes.shape[2] != 4 or scores.rank != 3 or \
                (scores.shape[0], scores.shape[2]) != boxes.shape[:2]:
            raise ShapeError(f"{self.name}: boxes [B, N, 4] and scores [B, C, N], got {boxes.shape} and {scores.shape}")
        if _int(self, attrs, "center_point_box") not in (0, 1) or _int(self, attrs, "max_output_boxes_per_class") < 0:
            raise ShapeError(f"{self.name}: center_point_box 0 or 1 and a count >= 0")
        for key in ("iou_threshold", "score_threshold"):
            if key in attrs and not isinstance(attrs[key], float):
                raise ShapeError(f"{self.name}: {key} must be a float")
        per_class = min(boxes.shape[1], int(attrs["max_output_boxes_per_class"]))
        return [TensorType("int64", (scores.shape[0] * scores.shape[1] * per_class, 3), (0,))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 3 or first.shape[2] != 4:
            raise ShapeError(f"{self.name}: boxes must be [B, N, 4], got {first.shape}")
        if first.shape[1] > MAX_BOXES:
            raise ShapeError(f"{self.name}: more than {MAX_BOXES} boxes")
        scores = TensorType(first.dtype, (first.shape[0], int(rng.integers(1, 4)), first.shape[1]))
        attrs: Attrs = {"center_point_box": int(rng.integers(2)),
                        "max_output_boxes_per_class": int(rng.integers(0, first.shape[1] + 2)),
                        "iou_threshold": float(np.float32(rng.choice([0.0, 0.3, 0.5, 0.7, 1.0])))}
        if rng.random() < 0.5:
            attrs["score_threshold"] = float(np.float32(rng.uniform(-1.0, 1.0)))
        self.infer([first, scores], attrs)
        return [first, scores], attrs

    @staticmethod
    def corners(box: np.ndarray, center_point_box: int) -> tuple[float, float, float, float]:
        """(y_min, x_min, y_max, x_max) of one box."""
        if center_point_box:
            x, y, w, h = (float(v) for v in box)
            return y - h / 2, x - w / 2, y + h / 2, x + w / 2
        y1, x1, y2, x2 = (float(v) for v in box)
        return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)

    def iou(self, a: np.ndarray, b: np.ndarray, center_point_box: int) -> float:
        """ONNX's intersection over union (0 where either box or the intersection is empty)."""
        ay0, ax0, ay1, ax1 = self.corners(a, center_point_box)
        by0, bx0, by1, bx1 = self.corners(b, center_point_box)
        iw, ih = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
        area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
        if iw <= 0 or ih <= 0 or area_a <= 0 or area_b <= 0:
            return 0.0
        return iw * ih / (area_a + area_b - iw * ih)

    def candidates(self, scores: np.ndarray, attrs: Attrs) -> list[int]:
        """One class's boxes that pass the score threshold, by descending score (ties: the lower index first)."""
        keep = [k for k in range(scores.size) if "score_threshold" not in attrs or scores[k] > attrs["score_threshold"]]
        return sorted(keep, key=lambda k: (-float(scores[k]), k))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        boxes, scores = xs
        cpb, limit, threshold = int(attrs["center_point_box"]), int(attrs["max_output_boxes_per_class"]), \
            float(attrs.get("iou_threshold", 0.0))
        rows = []
        for b in range(boxes.shape[0]):
            for c in range(scores.shape[1]):
                kept: list[int] = []
                for k in self.candidates(scores[b, c], attrs):
                    if len(kept) == limit:
                        break
                    if all(self.iou(boxes[b, k], boxes[b, j], cpb) <= threshold for j in kept):
                        kept.append(k)
                rows += [(b, c, k) for k in kept]
        return [np.asarray(rows, dtype=np.int64).reshape(-1, 3)]

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """Scores within the tolerance of each other or of the score threshold, or an IoU within it of the IoU
        threshold: legal rounding may reorder, admit or suppress a box."""
        boxes, scores = (np.asarray(x, dtype=np.float64) for x in xs)
        threshold, cpb = float(attrs.get("iou_threshold", 0.0)), int(attrs["center_point_box"])

        def close(a: float, b: float) -> bool:
            return abs(a - b) <= tol * max(1.0, abs(b))

        for b in range(boxes.shape[0]):
            n = boxes.shape[1]
            if any(close(self.iou(boxes[b, i], boxes[b, j], cpb), threshold) for i in range(n) for j in range(i)):
                return True
            for c in range(scores.shape[1]):
                v = np.sort(scores[b, c])
                if np.any(np.diff(v) <= tol * np.maximum(1.0, np.abs(v[1:]))):
                    return True
                if "score_threshold" in attrs and any(close(float(x), attrs["score_threshold"]) for x in v):
                    return True
        return False


for _spec in (NonZero(), Unique(), CompressComputed(), NonMaxSuppression()):
    register(_spec)
