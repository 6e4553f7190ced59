"""dlcfuzz: finds bugs in deep-learning compilers."""

__version__ = "0.1.0"
