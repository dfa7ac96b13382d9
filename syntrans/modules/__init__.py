"""Attention with syntax hooks."""
