"""nn operators."""
