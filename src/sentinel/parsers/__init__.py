"""Parsers for benchmark outputs: pure functions over text."""
