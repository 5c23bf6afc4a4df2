"""Diagnoses: the named mistakes (FORMAT.md section 5) and every rule that names one.

A failed check gets at most one diagnosis: `(slug, title, hint)`. The checks compare
(grader.checks.compare says WHAT differs); the rules here say WHICH mistake that is, from
the difference and from what the run did. Import the module you need: `catalogue` (the
slugs), `errors`, `differences`, `curves`, `run`, `provenance` (the rules). Every rule is
total over captured numbers (NaN, infinities, subnormals): none raises."""
