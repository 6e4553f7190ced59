"""Spatial sampling operators: grid sample, affine grid, col2im, RoI align/pool, max-unpool, deformable conv."""
