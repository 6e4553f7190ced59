"""reduce operators."""
