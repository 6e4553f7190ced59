"""Mutations of our graphs: semantics-preserving metamorphic mutations (metamorphic) and malformed
ONNX models (malformed). HirGen's function rewrites work on lowered Relax modules, so they are
TVM's (backends/tvm/function_rewrites.py)."""
