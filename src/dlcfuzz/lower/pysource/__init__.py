"""The Python-source lowering shared by the Python targets (torch, jax): `codegen` (spelling, emitter,
program builder) and the rules that are the same up to spelling (`rules*.py`)."""
