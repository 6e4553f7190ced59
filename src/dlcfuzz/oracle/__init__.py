"""Oracles: decide bug / unknown / pass from observations. They never run anything."""
