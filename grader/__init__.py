"""gradlab's grading engine. Pure Python: it never imports Django.

`grader.grade(job, sandbox=..., cache=...)` is the entry point the platform calls
(see grader/engine.py and grader/FORMAT.md).
"""
