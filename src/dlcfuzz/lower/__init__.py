"""Lowerings of a Graph to compiler IRs, and the ONNX importer."""
