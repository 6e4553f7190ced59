"""Linear-algebra operators beyond matmul: einsum, determinant."""
