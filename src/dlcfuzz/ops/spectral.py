"""Spectral operators: DFT, STFT, window functions, mel weight matrix."""
