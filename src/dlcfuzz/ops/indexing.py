"""Indexing operators: gathers and scatters by index tensors, one-hot, compress, reverse-sequence, center-crop-pad."""
