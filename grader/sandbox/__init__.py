"""Sandbox backends: see base.Sandbox and get_backend()."""
