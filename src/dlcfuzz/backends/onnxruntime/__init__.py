"""ONNXRuntime as a compiler under test: `backend.py` (the Backend: levels, knobs, configurations),
`optimizers.py` (its optimization levels and graph transformers, and ddmin over them), `gaps.py`
(known gaps), `reproducer.py` (standalone scripts), `trigger.py` (did an optimization fire), `opsets.py` (the
transformers gated below our opset, and the model written there), `transformers.py` (the Python transformer
optimizer: its configurations and fusions).

Importing this package does not import onnxruntime: only `backend.py`, `trigger.py` and the
scripts themselves do.
"""

# ONNXRuntime's C++ frames in its error traces ("in onnxruntime::InferenceSession::Initialize()"); OpenVINO's
# `ort` configuration shows them too
ORT_FRAMES = (r"in (onnxruntime::[\w:<>]+)",)
