"""Operators on types and shapes: Shape, Size, ConstantOfShape, CastLike, BitCast."""
