"""Exercise trees: a module or packages as `{path: text}` with the layout of exercises/,
read from a folder or from an uploaded `.tar.gz`/`.zip` archive, and written back to one.

An upload is untrusted, so an archive is read defensively: its format is told by its first
bytes (never its name); every entry must be a regular file or a folder, at a relative path
without `..`, named as in FORMAT.md section 1 (`module.toml`, `<slug>/exercise.toml`,
`<slug>/wrong/<name>.py`, ...), UTF-8 text, within the caps of `ArchiveLimits`; anything
else is refused with an `ArchiveError` that names the entry. A folder on disk goes through
the same checks (`read_folder`), so `load_exercises` and an upload share one code path from
the bytes on.

Writing is deterministic (sorted entries, fixed times, modes and owners, no gzip name or
time), so export -> import -> export gives the same bytes, and each file's bytes are kept.
"""

from __future__ import annotations

import gzip
import io
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from grader import spec

TAR_GZ = "tar.gz"
ZIP = "zip"
FORMATS = (TAR_GZ, ZIP)
CONTENT_TYPES = {TAR_GZ: "application/gzip", ZIP: "application/zip"}
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
ZIP_EMPTY_MAGIC = b"PK\x05\x06"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
FILE_MODE = 0o644

_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]*"
_SLUG = r"[a-z0-9]+(?:-[a-z0-9]+)*"
KNOWN_FILE = re.compile(
    rf"^(?:{re.escape(spec.MODULE_MANIFEST)}"
    rf"|{_SLUG}/(?:exercise\.toml|statement\.md|starter\.py|solution\.py|cases\.py)"
    rf"|{_SLUG}/(?:wrong|alternatives)/{_NAME}\.py)$"
)
KNOWN_FOLDER = re.compile(rf"^{_SLUG}(?:/(?:wrong|alternatives))?$")
LAYOUT_HINT = (
    "an archive holds the layout of exercises/: module.toml and <slug>/ folders with "
    "exercise.toml, statement.md, starter.py, solution.py, cases.py, wrong/<name>.py and "
    "alternatives/<name>.py"
)


class ArchiveError(spec.PackageError):
    """An archive or exercise tree refused; the message names the archive and the entry."""


@dataclass(frozen=True)
class ArchiveLimits:
    """Caps on what one upload or folder may hold (checked before anything is read whole)."""

    archive_bytes: int = 10_000_000  # the upload itself, compressed
    files: int = 1_000
    file_bytes: int = 512_000
    total_bytes: int = 20_000_000  # all files, uncompressed


DEFAULT_LIMITS = ArchiveLimits()


@dataclass(frozen=True)
class ExerciseTree:
    """A module's `module.toml` (None in an archive of packages only) and each package's
    files relative to its folder, by slug."""

    module: spec.Module | None
    packages: Mapping[str, Mapping[str, str]]
    module_toml: str = ""  # the text of module.toml, as read

    def package(self, slug: str, *, origin: str) -> spec.Package:
        """Parses one package (PackageError names `origin/<slug>/<file>`); with a
        module.toml, its checks may only be tagged with the module's objectives."""
        where = f"{origin}/{slug}"
        package = spec.Package.from_files(self.packages[slug], origin=where)
        if package.slug != slug:
            raise spec.PackageError(
                f"{where}/{spec.MANIFEST}: slug: must equal the folder name {slug!r}"
            )
        if self.module is not None:
            spec.check_objectives(package, self.module.objective_ids, origin=where)
        return package


# -- reading -------------------------------------------------------------------------


def read_archive(
    data: bytes, *, name: str = "archive", limits: ArchiveLimits = DEFAULT_LIMITS
) -> dict[str, str]:
    """The files of a `.tar.gz` or `.zip` archive as `{path: text}`, checked entry by entry."""
    if len(data) > limits.archive_bytes:
        raise ArchiveError(f"{name}: larger than {limits.archive_bytes} bytes")
    kind = archive_format(data)
    if kind is None:
        raise ArchiveError(f"{name}: not a .tar.gz or .zip archive")
    reader = _tar_entries if kind == TAR_GZ else _zip_entries
    collector = _Collector(name, limits)
    try:
        for entry, payload in reader(data, name, limits):
            if payload is None:
                collector.folder(entry)
            else:
                collector.add(entry, payload)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, zlib.error) as error:
        raise ArchiveError(f"{name}: damaged archive ({error})") from None
    return collector.finish()


def archive_format(data: bytes) -> str | None:
    if data.startswith(GZIP_MAGIC):
        return TAR_GZ
    if data.startswith((ZIP_MAGIC, ZIP_EMPTY_MAGIC)):
        return ZIP
    return None


def read_folder(root: str | Path, *, limits: ArchiveLimits = DEFAULT_LIMITS) -> dict[str, str]:
    """The files of an exercises/-like folder, under the archive's rules (hidden entries and
    `__pycache__` are skipped, as a checkout holds them)."""
    base = Path(root)
    name = str(base).rstrip("/")
    collector = _Collector(name, limits)
    for path in sorted(base.rglob("*")):
        relative = path.relative_to(base)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        entry = relative.as_posix()
        if path.is_symlink():
            raise ArchiveError(f"{name}/{entry}: symbolic links are not allowed")
        if path.is_dir():
            collector.folder(entry)
        elif path.is_file():
            collector.check_size(entry, path.stat().st_size)
            with path.open("rb") as handle:
                collector.add(entry, handle.read(limits.file_bytes + 1))
        else:
            raise ArchiveError(f"{name}/{entry}: not a regular file")
    return collector.finish()


def check_package(
    files: Mapping[str, str],
    *,
    slug: str,
    name: str = "package",
    limits: ArchiveLimits = DEFAULT_LIMITS,
) -> dict[str, str]:
    """One package's files (paths relative to its folder) under the rules of an upload."""
    collector = _Collector(name, limits)
    for path, text in files.items():
        if not isinstance(path, str) or not isinstance(text, str):
            raise ArchiveError(f"{name}: file names and contents must be text")
        collector.add(f"{slug}/{path}", text.encode("utf-8"))
    prefix = f"{slug}/"
    return {path.removeprefix(prefix): text for path, text in collector.finish().items()}


def tree_of(files: Mapping[str, str], *, name: str = "archive") -> ExerciseTree:
    """Splits `{path: text}` into module.toml and packages (paths already checked)."""
    module = None
    module_toml = files.get(spec.MODULE_MANIFEST, "")
    if spec.MODULE_MANIFEST in files:
        where = f"{name}/{spec.MODULE_MANIFEST}"
        module = spec.parse_module(files[spec.MODULE_MANIFEST], where)
    packages: dict[str, dict[str, str]] = {}
    for path, text in files.items():
        if path == spec.MODULE_MANIFEST:
            continue
        slug, relative = path.split("/", 1)
        packages.setdefault(slug, {})[relative] = text
    if module is None and not packages:
        raise ArchiveError(f"{name}: holds no module.toml and no exercise package")
    return ExerciseTree(
        module=module,
        module_toml=module_toml,
        packages=MappingProxyType({s: MappingProxyType(f) for s, f in sorted(packages.items())}),
    )


class _Collector:
    """Applies the rules every entry obeys, whatever it came from."""

    def __init__(self, name: str, limits: ArchiveLimits) -> None:
        self.name = name
        self.limits = limits
        self.files: dict[str, str] = {}
        self.total = 0
        self.entries = 0

    def _count(self, entry: str) -> None:
        self.entries += 1
        if self.entries > self.limits.files:
            raise ArchiveError(f"{self.name}: more than {self.limits.files} entries")

    def folder(self, raw: str) -> None:
        self._count(raw)
        entry = self.path(raw.rstrip("/"))
        if not KNOWN_FOLDER.match(entry):
            raise ArchiveError(f"{self.name}/{entry}/: unknown folder ({LAYOUT_HINT})")

    def path(self, raw: str) -> str:
        entry = raw[2:] if raw.startswith("./") else raw
        if entry.startswith("/") or re.match(r"^[A-Za-z]:", entry) or "\\" in entry:
            raise ArchiveError(f"{self.name}: {raw!r}: absolute paths are not allowed")
        if any(part == ".." for part in entry.split("/")):
            raise ArchiveError(f"{self.name}: {raw!r}: paths with '..' are not allowed")
        if any(part in ("", ".") for part in entry.split("/")):
            raise ArchiveError(f"{self.name}: {raw!r}: not a plain relative path")
        return entry

    def check_size(self, entry: str, size: int) -> None:
        if size > self.limits.file_bytes:
            raise ArchiveError(f"{self.name}/{entry}: larger than {self.limits.file_bytes} bytes")
        if self.total + size > self.limits.total_bytes:
            raise ArchiveError(
                f"{self.name}: files larger than {self.limits.total_bytes} bytes in all"
            )

    def add(self, raw: str, payload: bytes) -> None:
        self._count(raw)
        entry = self.path(raw)
        if not KNOWN_FILE.match(entry):
            raise ArchiveError(f"{self.name}/{entry}: unknown file ({LAYOUT_HINT})")
        if entry in self.files:
            raise ArchiveError(f"{self.name}/{entry}: appears twice")
        self.check_size(entry, len(payload))
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ArchiveError(f"{self.name}/{entry}: not UTF-8 text ({error})") from None
        if "\x00" in text:
            raise ArchiveError(f"{self.name}/{entry}: not a text file (holds NUL bytes)")
        self.total += len(payload)
        self.files[entry] = text

    def finish(self) -> dict[str, str]:
        if not self.files:
            raise ArchiveError(f"{self.name}: holds no files")
        return dict(sorted(self.files.items()))


def _tar_entries(
    data: bytes, name: str, limits: ArchiveLimits
) -> Iterator[tuple[str, bytes | None]]:
    """A gzipped tar's entries one at a time: (path, bytes), or (path, None) for a folder."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        while (member := tar.next()) is not None:
            if member.isdir():
                yield member.name, None
                continue
            _refuse_special(name, member.name, _tar_kind(member))
            _refuse_size(name, member.name, member.size, limits)
            handle = tar.extractfile(member)
            if handle is None:
                raise ArchiveError(f"{name}/{member.name}: not a regular file")
            yield member.name, handle.read(limits.file_bytes + 1)


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "a symbolic link"
    if member.islnk():
        return "a hard link"
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a FIFO"
    return "" if member.isreg() else "not a regular file"


def _zip_entries(
    data: bytes, name: str, limits: ArchiveLimits
) -> Iterator[tuple[str, bytes | None]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        if len(infos) > limits.files:
            raise ArchiveError(f"{name}: more than {limits.files} entries")
        for info in infos:
            if info.flag_bits & 0x1:
                raise ArchiveError(f"{name}/{info.filename}: encrypted entries are not allowed")
            _refuse_special(name, info.filename, _zip_kind(info))
            if info.is_dir():
                yield info.filename, None
                continue
            _refuse_size(name, info.filename, info.file_size, limits)
            with archive.open(info) as handle:  # the declared size may lie: read one byte past
                yield info.filename, handle.read(limits.file_bytes + 1)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if info.create_system != 3 or stat.S_IFMT(mode) == 0:  # no file type recorded
        return ""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "" if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def _refuse_size(name: str, entry: str, size: int, limits: ArchiveLimits) -> None:
    if size > limits.file_bytes:
        raise ArchiveError(f"{name}/{entry}: larger than {limits.file_bytes} bytes")


def _refuse_special(name: str, entry: str, kind: str) -> None:
    if kind:
        raise ArchiveError(f"{name}/{entry}: {kind}; only regular files are allowed")


# -- writing -------------------------------------------------------------------------


def write_archive(files: Mapping[str, str], kind: str) -> bytes:
    """`{path: text}` as a deterministic archive of the given format."""
    if kind == TAR_GZ:
        return _write_tar_gz(files)
    if kind == ZIP:
        return _write_zip(files)
    raise ValueError(f"unknown archive format {kind!r}; one of {FORMATS}")


def module_files(module_toml: str, packages: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """A whole module as one tree: module.toml and `<slug>/<file>` of each package."""
    files = {spec.MODULE_MANIFEST: module_toml}
    files.update(package_files(packages))
    return files


def package_files(packages: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    return {
        f"{slug}/{path}": text for slug, tree in packages.items() for path, text in tree.items()
    }


def _write_tar_gz(files: Mapping[str, str]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            data = files[path].encode("utf-8")
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), FILE_MODE, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as zipped:
        zipped.write(raw.getvalue())
    return out.getvalue()


def _write_zip(files: Mapping[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
            archive.writestr(info, files[path].encode("utf-8"))
    return out.getvalue()
