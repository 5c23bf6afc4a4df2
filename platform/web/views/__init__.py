"""Pages for learners (learner.py) and instructors (instructor.py)."""
