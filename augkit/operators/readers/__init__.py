"""Operators of this family; one module per operator."""
