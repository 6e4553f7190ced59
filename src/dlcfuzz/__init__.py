"""dlcfuzz: finds bugs in deep-learning compilers."""

import warnings

# NumPy's RuntimeWarnings raised in our own code (references on empty slices, overflow to inf) are
# expected: the oracles judge non-finite values themselves. They stay out of the user's terminal.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"dlcfuzz(\.|$)")

__version__ = "0.1.0"
