"""Recurrent operators: RNN, GRU, LSTM."""
