"""The authoring pages (issue 14): a module's exercises (create, upload, download, members),
one exercise's editor (manifest form and TOML view, every file, statement preview, save,
validate, publish), try-as-learner and the diff between versions. One view a form action,
each with its own URL; each view starts with courses.access' getter: instructors write,
reviewers read, validate and try."""
