"""Import and export of modules and packages (courses.services): the archive of a loaded
module is the archive of its folder, byte for byte, and an upload goes the same way as
`load_exercises`."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from gradlab_fixtures import EXERCISES, MODULE_SLUG
from platform_helpers import write_module

from grader.authoring import archive
from grader.spec import PackageError

pytestmark = pytest.mark.django_db


def _load(folder: Path) -> None:
    from courses.services import exercises_load

    exercises_load(exercises_dir=folder, strict=True)


@pytest.mark.heavy  # every package of the course, archived
@pytest.mark.parametrize("kind", archive.FORMATS)
def test_the_export_of_a_loaded_module_is_the_archive_of_its_folder(kind: str) -> None:
    from courses.models import Module
    from courses.services import module_export

    _load(EXERCISES)

    exported = module_export(module=Module.objects.get(slug=MODULE_SLUG), kind=kind)

    assert exported == archive.write_archive(archive.read_folder(EXERCISES), kind)
    files = archive.read_archive(exported)
    for path, text in files.items():
        assert text.encode("utf-8") == (EXERCISES / path).read_bytes(), path


@pytest.mark.heavy  # the course exported, imported, exported
@pytest.mark.parametrize("kind", archive.FORMATS)
def test_export_import_export_gives_the_same_bytes_and_versions(kind: str) -> None:
    from courses.models import Exercise, Module
    from courses.services import module_archive_import, module_export

    _load(EXERCISES)
    first = module_export(module=Module.objects.get(slug=MODULE_SLUG), kind=kind)
    hashes = dict(Exercise.objects.values_list("slug", "current_version__content_hash"))
    Module.objects.filter(slug=MODULE_SLUG).update(module_toml="")  # forget the source
    Exercise.objects.update(current_version=None)
    Exercise.objects.all().delete()  # a fresh catalog, the module row aside

    result = module_archive_import(data=first, name=f"course.{kind}")
    second = module_export(module=Module.objects.get(slug=MODULE_SLUG), kind=kind)

    assert second == first
    assert len(result.created) == len(hashes)
    assert dict(Exercise.objects.values_list("slug", "current_version__content_hash")) == hashes


def test_importing_an_unchanged_archive_makes_no_new_version(tmp_path: Path) -> None:
    from courses.models import ExerciseVersion, Module
    from courses.services import module_archive_import, module_export

    _load(write_module(tmp_path / "ex", ("first-gradient", "chain-rule")))
    data = module_export(module=Module.objects.get(slug=MODULE_SLUG), kind="zip")

    result = module_archive_import(data=data, name="course.zip")

    assert result.unchanged == ("first-gradient", "chain-rule")
    assert ExerciseVersion.objects.count() == 2


def test_a_changed_package_in_an_archive_becomes_a_new_version(tmp_path: Path) -> None:
    from courses.models import Exercise
    from courses.services import module_archive_import

    _load(write_module(tmp_path / "ex", ("first-gradient",)))
    files = archive.read_folder(tmp_path / "ex")
    files["first-gradient/statement.md"] += "\nA new paragraph.\n"

    result = module_archive_import(data=archive.write_archive(files, "tar.gz"), name="m.tar.gz")

    exercise = Exercise.objects.get(slug="first-gradient")
    assert result.updated == ("first-gradient",)
    assert exercise.current_version.number == 2
    assert exercise.current_version.statement.endswith("A new paragraph.\n")


def test_a_hostile_archive_is_refused_and_writes_nothing() -> None:
    from courses.models import Exercise, Module
    from courses.services import module_archive_import

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as handle:
        for path, text in archive.read_folder(EXERCISES).items():
            handle.writestr(path, text)
        handle.writestr("first-gradient/../../x.py", "x = 1\n")
    data = out.getvalue()

    with pytest.raises(archive.ArchiveError, match=r"paths with '\.\.' are not allowed"):
        module_archive_import(data=data, name="evil.zip")

    assert not Module.objects.exists() and not Exercise.objects.exists()


def test_an_archive_with_a_malformed_package_is_refused_whole_when_strict(tmp_path: Path) -> None:
    from courses.models import Exercise
    from courses.services import module_archive_import

    files = archive.read_folder(write_module(tmp_path / "ex", ("first-gradient", "chain-rule")))
    files["chain-rule/exercise.toml"] = files["chain-rule/exercise.toml"].replace(
        "points = 10", "points = 11", 1
    )

    with pytest.raises(PackageError, match=r"^m\.zip/chain-rule/exercise\.toml: points"):
        module_archive_import(data=archive.write_archive(files, "zip"), name="m.zip")

    assert not Exercise.objects.exists()


def test_an_archive_of_packages_only_cannot_be_loaded_as_a_module(tmp_path: Path) -> None:
    from courses.services import module_archive_import

    files = archive.read_folder(write_module(tmp_path / "ex", ("first-gradient",)))
    del files["module.toml"]

    with pytest.raises(archive.ArchiveError, match=r"p\.zip/module\.toml: file missing"):
        module_archive_import(data=archive.write_archive(files, "zip"), name="p.zip")


def test_a_package_exports_alone_in_its_folder(tmp_path: Path) -> None:
    from courses.models import Exercise
    from courses.services import exercise_export

    _load(write_module(tmp_path / "ex", ("first-gradient", "chain-rule")))

    data = exercise_export(exercise=Exercise.objects.get(slug="chain-rule"), kind="tar.gz")

    files = archive.read_archive(data)
    on_disk = archive.read_folder(tmp_path / "ex")
    assert files == {k: v for k, v in on_disk.items() if k.startswith("chain-rule/")}


def test_a_renamed_or_reordered_module_exports_a_new_module_toml(tmp_path: Path) -> None:
    from courses.models import Exercise, Module
    from courses.services import module_export

    _load(write_module(tmp_path / "ex", ("first-gradient", "chain-rule")))
    Module.objects.filter(slug=MODULE_SLUG).update(title='Autograd "basics"')
    Exercise.objects.filter(slug="chain-rule").update(order=0)
    Exercise.objects.filter(slug="first-gradient").update(order=1)

    data = module_export(module=Module.objects.get(slug=MODULE_SLUG), kind="zip")

    tree = archive.tree_of(archive.read_archive(data))
    assert tree.module is not None
    assert tree.module.title == 'Autograd "basics"'
    assert tree.module.exercises == ("chain-rule", "first-gradient")


def test_load_exercises_refuses_a_folder_an_upload_could_not_hold(tmp_path: Path) -> None:
    from courses.models import Exercise
    from courses.services import exercises_load

    folder = write_module(tmp_path / "ex", ("first-gradient",))
    (folder / "first-gradient" / "notes.txt").write_text("todo\n", encoding="utf-8")

    with pytest.raises(archive.ArchiveError, match=r"first-gradient/notes\.txt: unknown file"):
        exercises_load(exercises_dir=folder)

    assert not Exercise.objects.exists()
