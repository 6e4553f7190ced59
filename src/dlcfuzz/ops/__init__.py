"""The operator registry. Importing this package registers every family; `check_graph` types a
whole graph with the families' rules."""

from dlcfuzz.ops import (  # noqa: F401  (registration side effects)
    attention,
    contrib,
    data_shape,
    elementwise,
    indexing,
    linalg,
    loss,
    meta,
    nn,
    normalization,
    ordering,
    quant,
    quant_integer,
    recurrent,
    reduce,
    reduce_lp,
    shape,
    spatial,
    spectral,
)
from dlcfuzz.ops.base import (
    ANY,
    NONNEG,
    NONZERO,
    POSITIVE,
    SMALL,
    UNIT_OPEN,
    Attrs,
    Domain,
    OpSpec,
    ValueAttr,
    register,
    registry,
)
from dlcfuzz.ops.check import check_graph
from dlcfuzz.ops.regions import REGION_OPS


def get_op(name: str) -> OpSpec:
    """The spec of an operator of the registry or of a region (`ops/regions.py`, not in the registry)."""
    spec = registry().get(name)
    return spec if spec is not None else REGION_OPS[name]


def all_ops() -> list[OpSpec]:
    return sorted(registry().values(), key=lambda s: (s.family, s.name))


__all__ = [
    "ANY", "NONNEG", "NONZERO", "POSITIVE", "SMALL", "UNIT_OPEN",
    "Attrs", "Domain", "OpSpec", "ValueAttr", "all_ops", "check_graph", "get_op", "register", "registry",
]
