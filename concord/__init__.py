"""Concord's importable parts that need no Django settings (see `concord.stats`)."""
