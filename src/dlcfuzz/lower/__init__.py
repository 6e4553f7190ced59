"""Lowerings of a Graph to compiler IRs, and the importers back: ONNX (onnx_import) and TVM's Relax (relax_import)."""
