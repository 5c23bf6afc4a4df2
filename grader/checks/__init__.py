"""Checks: pure comparisons of a learner's capture with the reference's (FORMAT.md
section 4). `grader.checks.registry.REGISTRY` maps each check type to its function and
its typed options. This package's own namespace stays empty so that its building blocks
(compare, trials, options, formatting) import without loading every check."""
