"""Integer-arithmetic quantized operators: QLinearMatMul, QLinearConv, ConvInteger, MatMulInteger, DynamicQuantizeLinear."""
