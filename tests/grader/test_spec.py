"""Exercise packages: parsing, strict validation with errors naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from grading_helpers import REPO, package_at

from grader.authoring import archive
from grader.protocol import Limits
from grader.spec import (
    Objective,
    Package,
    PackageError,
    check_objectives,
    load_module,
    load_package,
    package_hash,
    parse_module,
)


def files_with(manifest_edit: tuple[str, str] | None = None, **extra: str) -> dict[str, str]:
    files = dict(package_at("first-gradient").files)
    if manifest_edit:
        old, new = manifest_edit
        assert old in files["exercise.toml"]
        files["exercise.toml"] = files["exercise.toml"].replace(old, new, 1)
    files.update(extra)
    return files


def test_first_gradient_loads_into_a_typed_manifest() -> None:
    package = load_package(REPO / "exercises" / "first-gradient")
    manifest = package.manifest
    assert (package.slug, manifest.kind, manifest.names) == ("first-gradient", "script", ("x", "y"))
    assert manifest.points == sum(check.points for check in manifest.checks)
    assert {w.diagnosis for w in manifest.wrong} >= {"graph-broken", "hard-coded"}
    assert manifest.limits.wall_seconds == Limits().wall_seconds


def test_content_hash_is_stable_and_changes_with_any_file() -> None:
    files = files_with()
    assert Package.from_files(files).content_hash == package_hash(files)
    changed = files_with(**{"statement.md": files["statement.md"] + "\n"})
    assert Package.from_files(changed).content_hash != package_hash(files)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("points = 10", "points = 11"), "points: is 11 but the checks' points sum to 10"),
        (('type = "grad"', 'type = "gradient"'), "checks[0].type: 'gradient' is not one of"),
        (("points = 5", "points = -5"), "checks[0].points: must be a positive integer"),
        (('target = "x"', 'target = "z"'), "checks[0].target: 'z' is not listed in names"),
        (('kind = "script"', 'kind = "quiz"'), "kind: must be one of"),
        (('diagnosis = "graph-broken"', 'diagnosis = "typo"'), "wrong[0].diagnosis: 'typo'"),
        (('title = "Your first gradient"', 'title = "T"\ncolour = "red"'), "colour: unknown field"),
        (('type = "grad"', 'type = "grad"\ntolerance = 1'), "checks[0].tolerance: unknown field"),
        (
            ('type = "grad"', 'type = "grad"\nrtol = "tight"'),
            "checks[0].rtol: must be a non-negative",
        ),
        (('slug = "first-gradient"', 'slug = "First Gradient"'), "slug:"),
        (
            ('type = "grad"', 'type = "grad"\ndiagnosis = "typo"'),
            "checks[0].diagnosis: 'typo' is not a known diagnosis",
        ),
        (
            ('type = "grad"', 'type = "grad"\nsteps_match = true'),
            "checks[0].steps_match: unknown field",
        ),
        (
            ('type = "grad"', 'type = "device"\nrtol = 0.1'),
            "checks[0].rtol: unknown field",
        ),
    ],
)
def test_malformed_manifest_names_the_file_and_the_field(
    edit: tuple[str, str], message: str
) -> None:
    with pytest.raises(PackageError) as error:
        Package.from_files(files_with(edit), origin="exercises/first-gradient")
    assert str(error.value).startswith("exercises/first-gradient/exercise.toml: ")
    assert message in str(error.value)


def test_a_declared_wrong_file_must_exist() -> None:
    files = files_with()
    del files["wrong/hard-coded.py"]
    with pytest.raises(PackageError, match=r"wrong\[\d\]\.file: 'wrong/hard-coded.py' is not in"):
        Package.from_files(files)


def test_missing_required_files_and_syntax_errors_are_named() -> None:
    files = files_with()
    del files["solution.py"]
    with pytest.raises(PackageError, match=r"solution\.py: file missing"):
        Package.from_files(files, origin="pkg")
    with pytest.raises(PackageError, match=r"starter.py: line 1: syntax error"):
        Package.from_files(files_with(**{"starter.py": "def (:\n"}), origin="pkg")


def test_invalid_toml_is_a_package_error() -> None:
    with pytest.raises(PackageError, match=r"exercise\.toml: invalid TOML"):
        Package.from_files(files_with(**{"exercise.toml": "slug = \n"}))


def test_function_exercises_need_entry_trials_and_cases() -> None:
    files = dict(package_at("chunked-mean").files)
    del files["cases.py"]
    with pytest.raises(PackageError, match=r"cases\.py: file missing"):
        Package.from_files(files)
    files = dict(package_at("chunked-mean").files)
    files["exercise.toml"] = files["exercise.toml"].replace("trials = 4", "trials = 0")
    with pytest.raises(PackageError, match="trials: must be a positive integer"):
        Package.from_files(files)


def test_cases_py_defines_make_cases_and_no_learner_side_runner() -> None:
    files = dict(package_at("chunked-mean").files)
    files["cases.py"] = files["cases.py"].replace("def make_cases(", "def generate(")
    with pytest.raises(PackageError, match=r"cases\.py: must define make_cases"):
        Package.from_files(files)
    files = dict(package_at("chunked-mean").files)
    files["cases.py"] += "\n\ndef run(entry, case):\n    return entry(case)\n"
    with pytest.raises(PackageError, match=r"cases\.py: run\(\)/generate\(\) are gone"):
        Package.from_files(files)
    files["cases.py"] = "def make_cases(seed, trials)\n"
    with pytest.raises(PackageError, match=r"cases\.py: line 1"):
        Package.from_files(files)


def test_folder_name_must_equal_the_slug(tmp_path: Path) -> None:
    folder = tmp_path / "renamed"
    for name, text in files_with().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    with pytest.raises(PackageError, match="slug: must equal the folder name 'renamed'"):
        load_package(folder)


def test_non_utf8_file_is_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "first-gradient"
    for name, text in files_with().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (folder / "statement.md").write_bytes(b"\xff\xfe")
    with pytest.raises(PackageError, match=r"statement\.md: not UTF-8"):
        load_package(folder)


def test_module_manifest_lists_the_course_in_order() -> None:
    module = load_module(REPO / "exercises")
    assert module.exercises[0] == "first-gradient"
    assert len(module.exercises) == 19


def test_limits_are_validated() -> None:
    files = files_with(**{})
    files["exercise.toml"] += "\n[limits]\nwall_seconds = 0\n"
    with pytest.raises(PackageError, match=r"limits\.wall_seconds: must be a positive"):
        Package.from_files(files)
    files = files_with()
    files["exercise.toml"] += "\n[limits]\nmemory_mb = 256\n"
    assert Package.from_files(files).manifest.limits.memory_mb == 256


def test_new_check_options_are_accepted_where_they_belong() -> None:
    manifest = load_package(REPO / "exercises" / "training-loop").manifest
    steps = next(c for c in manifest.checks if c.type == "backward_calls")
    assert (steps.options.steps_match, steps.options.diagnosis) == (True, "extra-backward")
    history = next(
        c
        for c in load_package(REPO / "exercises" / "gradient-accumulation").manifest.checks
        if c.type == "grad_history"
    )
    assert dict(history.options.variants) == {
        "cleared-between-passes": "_history_if_cleared_between"
    }


# -- learning objectives (module.toml [[objectives]], a check's `objectives`) ---------------

MODULE_HEAD = 'slug = "m"\ntitle = "M"\nexercises = ["first-gradient"]\n'


def test_the_course_module_declares_the_course_texts_objectives_and_tags_every_check() -> None:
    module = load_module(REPO / "exercises")
    assert {"backward", "read-grad", "accumulation", "clearing-gradients", "retain-graph",
            "non-scalar-backward", "debugging", "custom-functions",
            "higher-order"} <= set(module.objective_ids)  # fmt: skip
    for slug in module.exercises:
        package = load_package(REPO / "exercises" / slug)
        check_objectives(package, module.objective_ids, origin=slug)
        untagged = [c.name for c in package.manifest.checks if not c.objectives]
        assert untagged == [], f"{slug}: checks without objectives: {untagged}"
    used = {
        tag
        for slug in module.exercises
        for check in load_package(REPO / "exercises" / slug).manifest.checks
        for tag in check.objectives
    }
    assert used == set(module.objective_ids)  # every objective is shown by some check


def test_a_module_reads_its_objectives_in_order() -> None:
    text = MODULE_HEAD + (
        '\n[[objectives]]\nid = "backward"\ntitle = "Use backward()"\n'
        '\n[[objectives]]\nid = "read-grad"\ntitle = "Read .grad"\n'
    )
    module = parse_module(text, "module.toml")
    assert module.objectives == (
        Objective("backward", "Use backward()"),
        Objective("read-grad", "Read .grad"),
    )


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        ('[[objectives]]\nid = "a"\ntitle = "A"\n[[objectives]]\nid = "a"\ntitle = "B"\n',
         r"objectives\[1\]\.id: 'a' is declared twice"),
        ('[[objectives]]\nid = "Read Grad"\ntitle = "A"\n',
         r"objectives\[0\]\.id: 'Read Grad' must be lowercase words"),
        ('[[objectives]]\nid = "a"\n', r"objectives\[0\]\.title: required field missing"),
        ('[[objectives]]\nid = "a"\ntitle = "A"\nweight = 2\n',
         r"objectives\[0\]\.weight: unknown field"),
        ('objectives = ["a"]\n', r"objectives\[0\]: must be a table with id and title"),
    ],
)  # fmt: skip
def test_malformed_objectives_are_package_errors_naming_the_field(
    tables: str, message: str
) -> None:
    with pytest.raises(PackageError, match=rf"^module\.toml: {message}"):
        parse_module(MODULE_HEAD + tables, "module.toml")


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ('"backward", "backward"', r"checks\[0\]\.objectives: lists an objective twice"),
        ('"Backward"', r"checks\[0\]\.objectives\[0\]: 'Backward' is not an objective id"),
        ("1", r"checks\[0\]\.objectives: must be a list of objective ids"),
    ],
)
def test_malformed_objective_tags_are_package_errors_naming_the_check(
    tags: str, message: str
) -> None:
    files = files_with(('objectives = ["backward", "read-grad"]', f"objectives = [{tags}]"))
    with pytest.raises(PackageError, match=message):
        Package.from_files(files)


def test_a_tag_the_module_does_not_declare_is_a_package_error_naming_check_and_module() -> None:
    package = Package.from_files(files_with(('"read-grad"]', '"reading-grad"]')))
    with pytest.raises(
        PackageError,
        match=r"^fg/exercise\.toml: checks\[0\]\.objectives\[1\]: 'reading-grad' is not an "
        r"objective of the module \(module\.toml declares: backward, read-grad\)",
    ):
        check_objectives(package, ("backward", "read-grad"), origin="fg")


def test_an_archive_tree_checks_each_packages_tags_against_its_module_toml() -> None:
    files = {f"first-gradient/{p}": t for p, t in files_with().items()}
    declared = MODULE_HEAD + '[[objectives]]\nid = "backward"\ntitle = "B"\n'
    tree = archive.tree_of({"module.toml": declared, **files})
    with pytest.raises(PackageError, match=r"'read-grad' is not an objective of the module"):
        tree.package("first-gradient", origin="upload")
    assert archive.tree_of(files).package("first-gradient", origin="upload")  # no module.toml
