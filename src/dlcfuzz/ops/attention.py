"""Attention operators of the standard domain: Attention, RotaryEmbedding, LinearAttention, CausalConvWithState."""
