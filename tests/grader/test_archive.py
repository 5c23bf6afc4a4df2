"""grader.authoring.archive: exercise trees to/from .tar.gz/.zip, read defensively from uploads."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.authoring import archive
from grader.authoring.archive import (
    ArchiveError,
    ArchiveLimits,
    read_archive,
    read_archive_here,
    read_folder,
    write_archive,
)
from grader.spec import PackageError

REPO = Path(__file__).resolve().parents[2]
EXERCISES = REPO / "exercises"
STATEMENT = "first-gradient/statement.md"


def _tar_gz(*entries: tuple[tarfile.TarInfo, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            if info.isreg():
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return gzip.compress(raw.getvalue())


def _member(name: str, kind: bytes = tarfile.REGTYPE, **fields: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info


def _file(name: str, data: bytes = b"text\n") -> tuple[tarfile.TarInfo, bytes]:
    return _member(name), data


def _zip(*entries: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as handle:
        for name, data in entries:
            handle.writestr(name, data)
    return out.getvalue()


def _zip_info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def _package(slug: str) -> dict[str, str]:
    prefix = f"{slug}/"
    return {
        k.removeprefix(prefix): v for k, v in read_folder(EXERCISES).items() if k.startswith(prefix)
    }


def _refused(data: bytes, match: str, limits: ArchiveLimits = archive.DEFAULT_LIMITS) -> str:
    """The refusal of `data` by the archive's rules, read in this process: the rules are
    what these tests check. read_archive hands the same call to the bounded child, which
    the round trips and test_an_archive_error_... below (and test_archive_limits) go
    through."""
    with pytest.raises(ArchiveError, match=match) as caught:
        read_archive_here(data, name="upload.tar.gz", limits=limits)
    return str(caught.value)


# -- round trips ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", archive.FORMATS)
def test_the_course_folder_round_trips_through_an_archive_byte_for_byte(kind: str) -> None:
    files = read_folder(EXERCISES)

    data = write_archive(files, kind)
    back = read_archive(data, name=f"course.{kind}")

    assert back == files
    assert write_archive(back, kind) == data
    for path, text in back.items():
        assert text.encode("utf-8") == (EXERCISES / path).read_bytes(), path


def test_the_folder_reader_holds_every_package_file_and_skips_caches() -> None:
    files = read_folder(EXERCISES)

    assert "module.toml" in files and STATEMENT in files
    assert "first-gradient/wrong/sign-error.py" in files
    assert not any("__pycache__" in path or path.endswith(".pyc") for path in files)


def test_bytes_that_are_not_utf8_normalised_survive_the_round_trip() -> None:
    files = {STATEMENT: "line one\r\nno final newline, tab\there, é and ∇"}

    for kind in archive.FORMATS:
        assert read_archive(write_archive(files, kind)) == files


def test_tree_splits_module_toml_from_the_packages() -> None:
    tree = archive.tree_of(read_folder(EXERCISES), name="exercises")

    assert tree.module is not None and "first-gradient" in tree.module.exercises
    assert set(tree.packages) == set(tree.module.exercises)
    assert tree.module_toml == (EXERCISES / "module.toml").read_text(encoding="utf-8")
    package = tree.package("first-gradient", origin="exercises")
    assert (
        package.content_hash == archive.spec.load_package(EXERCISES / "first-gradient").content_hash
    )


def test_a_package_whose_folder_differs_from_its_slug_is_a_package_error() -> None:
    files = {f"renamed/{k}": v for k, v in _package("first-gradient").items()}
    tree = archive.tree_of(files, name="upload.zip")

    with pytest.raises(PackageError, match=r"upload\.zip/renamed/exercise\.toml: slug"):
        tree.package("renamed", origin="upload.zip")


def test_exports_are_deterministic_archives_other_tools_read() -> None:
    files = {"module.toml": 'slug = "m"\n', STATEMENT: "# Hi\n"}

    with tarfile.open(fileobj=io.BytesIO(write_archive(files, "tar.gz"))) as tar:
        members = tar.getmembers()
    with zipfile.ZipFile(io.BytesIO(write_archive(files, "zip"))) as handle:
        infos = handle.infolist()

    assert [m.name for m in members] == sorted(files)
    assert {(m.mtime, m.uid, m.gid, m.mode) for m in members} == {(0, 0, 0, 0o644)}
    assert [i.filename for i in infos] == sorted(files)
    assert {i.date_time for i in infos} == {archive.ZIP_EPOCH}


# -- hostile archives: each refusal -----------------------------------------------------


@pytest.mark.parametrize("name", ["/etc/passwd", "/first-gradient/solution.py", "C:/x.py"])
def test_an_absolute_path_is_refused(name: str) -> None:
    message = _refused(_tar_gz(_file(name)), "absolute paths are not allowed")
    assert name in message


@pytest.mark.parametrize("name", ["../module.toml", "first-gradient/../../etc/cron.d/x"])
def test_a_path_climbing_out_with_dot_dot_is_refused_in_tar_and_zip(name: str) -> None:
    _refused(_tar_gz(_file(name)), r"paths with '\.\.' are not allowed")
    _refused(_zip((name, b"x")), r"paths with '\.\.' are not allowed")


@pytest.mark.parametrize(
    ("kind", "fields", "what"),
    [
        (tarfile.SYMTYPE, {"linkname": "/etc/passwd"}, "a symbolic link"),
        (tarfile.LNKTYPE, {"linkname": "first-gradient/starter.py"}, "a hard link"),
        (tarfile.CHRTYPE, {"devmajor": 1, "devminor": 3}, "a device"),
        (tarfile.BLKTYPE, {"devmajor": 8, "devminor": 0}, "a device"),
        (tarfile.FIFOTYPE, {}, "a FIFO"),
    ],
)
def test_links_devices_and_fifos_in_a_tar_are_refused(
    kind: bytes, fields: dict[str, object], what: str
) -> None:
    entry = (_member("first-gradient/solution.py", kind, **fields), b"")

    message = _refused(_tar_gz(_file(STATEMENT), entry), "only regular files are allowed")

    assert what in message and "first-gradient/solution.py" in message


@pytest.mark.parametrize(
    ("mode", "what"),
    [
        (stat.S_IFLNK | 0o777, "a symbolic link"),
        (stat.S_IFCHR | 0o644, "a device"),
        (stat.S_IFIFO | 0o644, "a FIFO"),
        (stat.S_IFSOCK | 0o644, "a socket"),
    ],
)
def test_links_and_special_files_in_a_zip_are_refused(mode: int, what: str) -> None:
    data = _zip((_zip_info("first-gradient/solution.py", mode), b"/etc/passwd"))

    assert what in _refused(data, "only regular files are allowed")


def test_too_many_entries_are_refused_before_they_are_read() -> None:
    limits = ArchiveLimits(files=3)
    names = [f"first-gradient/wrong/w{i}.py" for i in range(5)]

    _refused(_tar_gz(*(_file(n) for n in names)), "more than 3 entries", limits)
    _refused(_zip(*((n, b"x") for n in names)), "more than 3 entries", limits)


def test_a_file_over_the_size_cap_is_refused_in_tar_and_zip() -> None:
    limits = ArchiveLimits(file_bytes=1_000)
    big = b"x" * 1_001

    assert STATEMENT in _refused(_tar_gz(_file(STATEMENT, big)), "larger than 1000 bytes", limits)
    _refused(_zip((STATEMENT, big)), "larger than 1000 bytes", limits)


def test_a_highly_compressed_file_is_refused_by_its_size_not_read_whole() -> None:
    bomb = b"\0" * 50_000_000  # 50 MB of zeros: about 50 KB compressed

    data = _tar_gz(_file(STATEMENT, bomb))

    assert len(data) < 200_000
    _refused(data, "larger than 512000 bytes")


def test_files_over_the_total_cap_are_refused() -> None:
    limits = ArchiveLimits(file_bytes=1_000, total_bytes=2_500)
    names = [f"first-gradient/wrong/w{i}.py" for i in range(3)]

    _refused(_zip(*((n, b"#" * 900) for n in names)), "larger than 2500 bytes in all", limits)


def test_an_upload_over_the_archive_cap_is_refused_unread() -> None:
    _refused(b"\x1f\x8b" + b"\0" * 100, "larger than 50 bytes", ArchiveLimits(archive_bytes=50))


def test_a_file_that_is_not_utf8_text_is_refused() -> None:
    message = _refused(_tar_gz(_file(STATEMENT, b"caf\xe9\n")), "not UTF-8 text")

    assert STATEMENT in message


def test_a_file_holding_nul_bytes_is_refused() -> None:
    _refused(_zip((STATEMENT, b"ELF\0\0\0")), "holds NUL bytes")


@pytest.mark.parametrize(
    "name",
    [
        "first-gradient/notes.txt",
        "run.sh",
        "first-gradient/wrong/payload.so",
        "first-gradient/helpers/util.py",
        "First-Gradient/solution.py",
        "first-gradient/wrong/.hidden.py",
        "first-gradient/exercise.toml/x",
    ],
)
def test_a_file_of_an_unknown_name_is_refused_with_the_layout(name: str) -> None:
    message = _refused(_zip((name, b"x = 1\n")), "unknown file")

    assert name in message and "module.toml and <slug>/ folders" in message


def test_an_unknown_folder_is_refused() -> None:
    _refused(_tar_gz((_member("first-gradient/data", tarfile.DIRTYPE), b"")), "unknown folder")
    _refused(_zip(("first-gradient/data/", b"")), "unknown folder")


def test_known_folders_and_a_leading_dot_slash_are_accepted() -> None:
    data = _tar_gz(
        (_member("./first-gradient", tarfile.DIRTYPE), b""),
        (_member("./first-gradient/wrong", tarfile.DIRTYPE), b""),
        _file("./first-gradient/wrong/a.py", b"a = 1\n"),
    )

    assert read_archive_here(data) == {"first-gradient/wrong/a.py": "a = 1\n"}


def test_the_same_path_twice_is_refused() -> None:
    _refused(_tar_gz(_file(STATEMENT, b"a"), _file(STATEMENT, b"b")), "appears twice")


def test_an_encrypted_zip_entry_is_refused() -> None:
    data = bytearray(_zip((STATEMENT, b"x")))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local, central
        at = data.index(signature) + offset
        data[at] |= 0x1  # general purpose flag bit 0: encrypted

    _refused(bytes(data), "encrypted entries are not allowed")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"just some text", "not a .tar.gz or .zip archive"),
        (b"", "not a .tar.gz or .zip archive"),
        (b"\x1f\x8b\x08\x00garbage", "damaged archive"),
        (b"PK\x03\x04garbage", "damaged archive"),
    ],
)
def test_bytes_that_are_not_a_readable_archive_are_refused(data: bytes, match: str) -> None:
    _refused(data, match)


def test_a_plain_uncompressed_tar_is_refused_by_its_bytes_not_its_name() -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.addfile(_member(STATEMENT, size=1), io.BytesIO(b"x"))

    _refused(raw.getvalue(), "not a .tar.gz or .zip archive")


def test_an_archive_without_files_is_refused() -> None:
    _refused(_zip(("first-gradient/", b"")), "holds no files")


def test_an_archive_error_is_a_package_error_naming_the_upload() -> None:
    with pytest.raises(PackageError, match=r"^course\.zip/run\.sh: unknown file"):
        read_archive(_zip(("run.sh", b"rm -rf /\n")), name="course.zip")


def test_the_bounded_child_refuses_a_tar_as_the_rules_read_here_do() -> None:
    link = (_member("first-gradient/solution.py", tarfile.SYMTYPE, linkname="/etc/passwd"), b"")
    data = _tar_gz(_file(STATEMENT), link)

    with pytest.raises(ArchiveError) as caught:
        read_archive(data, name="upload.tar.gz")

    assert str(caught.value) == _refused(data, "only regular files are allowed")


# -- the folder reader obeys the same rules ------------------------------------------------


def _copy_package(tmp_path: Path, slug: str = "first-gradient") -> Path:
    target = tmp_path / slug
    for path, text in _package(slug).items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda root: (root / "first-gradient/notes.txt").write_text("x"), "unknown file"),
        (lambda root: (root / "first-gradient/evil").symlink_to("/etc"), "symbolic links"),
        (lambda root: (root / "first-gradient/starter.py").write_bytes(b"\xff\xfe"), "UTF-8"),
    ],
)
def test_a_folder_is_read_under_the_rules_of_an_upload(
    tmp_path: Path, make: Callable[[Path], object], match: str
) -> None:
    root = _copy_package(tmp_path)
    make(root)

    with pytest.raises(ArchiveError, match=match):
        read_folder(root)
