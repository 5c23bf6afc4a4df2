"""Instructor tooling: package validation, mutants, scaffolding, archives, problem places,
the bench and the bounded child. The grading runtime never imports this package."""
