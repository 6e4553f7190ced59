"""OpenVINO (`--compiler openvino`, extra `openvino`): the backend, its known gaps and expected
errors, its standalone reproducer, and a planted fault that proves the oracles on it."""

from dlcfuzz.backends.openvino.backend import OpenVinoBackend

__all__ = ["OpenVinoBackend"]
