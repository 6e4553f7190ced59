"""A planted *reference* error, for tests/test_opinions.py: the compilers `wrong-reference` and
`wrong-reference-xla`/`-inductor` are the real ONNXRuntime, XLA and Inductor, but building one makes dlcfuzz's NumPy reference of `relu` wrong (its result plus one), in the
process that builds it: the campaign's driver and each of its workers (which import this module, since it
registered a compiler). The test restores the reference of its own process afterwards."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.backends import get_backend, register_backend
from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
from dlcfuzz.ops import get_op

WRONG_OP = "relu"


def break_reference() -> None:
    get_op(WRONG_OP).ref = lambda x, attrs: np.maximum(x, 0) + 1


def wrong_reference() -> OnnxRuntimeBackend:
    break_reference()
    return OnnxRuntimeBackend()


def wrong_reference_xla() -> Any:
    break_reference()
    return get_backend("xla")


def wrong_reference_inductor() -> Any:
    break_reference()
    return get_backend("inductor")


register_backend("wrong-reference", wrong_reference)
register_backend("wrong-reference-xla", wrong_reference_xla)
register_backend("wrong-reference-inductor", wrong_reference_inductor)
