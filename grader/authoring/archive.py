"""Exercise trees: a module or packages as `{path: text}` with the layout of exercises/,
read from a folder or from an uploaded `.tar.gz`/`.zip` archive, and written back to one.

An upload is untrusted, so an archive is read defensively: its format is told by its first
bytes (never its name); every entry must be a regular file or a folder, at a relative path
without `..`, named as in FORMAT.md section 1 (`module.toml`, `<slug>/exercise.toml`,
`<slug>/wrong/<name>.py`, ...), UTF-8 text, within the caps of `ArchiveLimits`; anything
else is refused with an `ArchiveError` that names the entry. A folder on disk goes through
the same checks (`read_folder`), so `load_exercises` and an upload share one code path from
the bytes on.

An upload is never parsed in the calling (web) process: `read_archive` hands it to a
bounded child (grader.authoring.bounded: memory, CPU, wall time and reply size capped, JSON only),
which first walks the archive's structure itself, before tarfile or zipfile read anything:
the tar stream is decompressed block by block under a cap and its 512-byte headers are
walked (a GNU long name/link or PAX header over `header_bytes`, too many extended headers
in a row, too many members or bytes are refused at their header), and a zip's central
directory is walked the same way (entries and extra fields capped). tarfile then reads only
the stream the walk saw. A child that runs out of a limit is refused as "could not be read
within its limits"; what it answers is checked again here, entry by entry.

Writing is deterministic (sorted entries, fixed times, modes and owners, no gzip name or
time), so export -> import -> export gives the same bytes, and each file's bytes are kept.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import io
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from grader import spec
from grader.authoring import bounded

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
    header_bytes: int = 4_096  # a GNU long name/link, PAX header or zip extra field
    headers_in_a_row: int = 4  # extended (GNU/PAX) headers before one tar member
    tar_bytes: int = 32_000_000  # the decompressed tar stream, headers and padding included
    memory_bytes: int = 512 * 1024 * 1024  # the reading child's address space
    cpu_seconds: int = 5  # the reading child's CPU time
    wall_seconds: float = 20.0  # how long the caller waits for the child

    @property
    def reply_bytes(self) -> int:
        """The most the child may answer: every file in base64, and its path."""
        return self.total_bytes * 4 // 3 + self.files * (self.header_bytes + 64) + 65_536

    @property
    def process(self) -> bounded.ProcessLimits:
        return bounded.ProcessLimits(
            memory_bytes=self.memory_bytes,
            cpu_seconds=self.cpu_seconds,
            wall_seconds=self.wall_seconds,
            reply_bytes=self.reply_bytes,
        )


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
    """The files of a `.tar.gz` or `.zip` archive as `{path: text}`, checked entry by entry,
    read in a bounded child process (never in the caller's)."""
    if len(data) > limits.archive_bytes:
        raise ArchiveError(f"{name}: larger than {limits.archive_bytes} bytes")
    if archive_format(data) is None:
        raise ArchiveError(f"{name}: not a .tar.gz or .zip archive")
    arguments = {"name": name, "limits": dataclasses.asdict(limits)}
    try:
        reply = bounded.run(f"{__name__}:read_in_child", data, arguments, limits.process)
    except bounded.BoundedError as error:
        raise ArchiveError(f"{name}: {LIMITS_REFUSAL} ({error})") from None
    return _files_of_reply(reply, name, limits)


LIMITS_REFUSAL = "the archive could not be read within its limits"
REPLY_MESSAGE_CHARS = 4_000  # the longest refusal text taken from the child


def read_in_child(data: bytes, *, name: str, limits: dict[str, Any]) -> dict[str, object]:
    """In the bounded child: `{"files": [[path, base64], ...]}` or `{"error": message}`."""
    try:
        files = read_archive_here(data, name=name, limits=ArchiveLimits(**limits))
    except ArchiveError as error:
        return {"error": str(error)}
    return {
        "files": [
            [path, base64.b64encode(text.encode("utf-8")).decode("ascii")]
            for path, text in files.items()
        ]
    }


def _files_of_reply(reply: object, name: str, limits: ArchiveLimits) -> dict[str, str]:
    """The child's answer, checked again under the archive's rules (it is not trusted)."""
    if isinstance(reply, dict) and isinstance(reply.get("error"), str):
        raise ArchiveError(reply["error"][:REPLY_MESSAGE_CHARS])
    entries = reply.get("files") if isinstance(reply, dict) else None
    if not isinstance(entries, list):
        raise ArchiveError(f"{name}: {LIMITS_REFUSAL} (an answer of the wrong shape)")
    collector = _Collector(name, limits)
    for entry in entries:
        if not (
            isinstance(entry, list) and len(entry) == 2 and all(isinstance(e, str) for e in entry)
        ):
            raise ArchiveError(f"{name}: {LIMITS_REFUSAL} (an answer of the wrong shape)")
        try:
            payload = base64.b64decode(entry[1], validate=True)
        except ValueError:
            raise ArchiveError(f"{name}: {LIMITS_REFUSAL} (an answer of the wrong shape)") from None
        collector.add(entry[0], payload)
    return collector.finish()


def read_archive_here(
    data: bytes, *, name: str = "archive", limits: ArchiveLimits = DEFAULT_LIMITS
) -> dict[str, str]:
    """`read_archive` in this process: only for the bounded child (or trusted bytes)."""
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
    """A gzipped tar's entries one at a time: (path, bytes), or (path, None) for a folder;
    tarfile reads only the stream `_scan_tar` walked, and only at the headers it saw."""
    stream, headers = _scan_tar(data, name, limits)
    with tarfile.open(fileobj=io.BytesIO(stream), mode="r:") as tar:
        while (member := tar.next()) is not None:
            if member.offset not in headers:
                raise ArchiveError(f"{name}: damaged archive (headers out of step)")
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
    _scan_zip(data, name, limits)
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


# -- the structure, walked before tarfile or zipfile read anything ---------------------

BLOCK = 512
GZIP_CHUNK = 65_536  # compressed bytes fed to the decompressor at a time
LONG_NAME_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)  # 'L', 'K'
PAX_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)  # 'x', 'g', 'X'
NO_DATA_TYPES = (  # tarfile skips no data after these (whatever their size field says)
    tarfile.LNKTYPE, tarfile.SYMTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.DIRTYPE,
    tarfile.FIFOTYPE,
)  # fmt: skip
POSIX_MAGIC = b"ustar\x0000"


class _Gunzip:
    """A gzip stream decompressed only as far as it is asked for, never past `cap` bytes."""

    def __init__(self, data: bytes, name: str, cap: int) -> None:
        self.data, self.name, self.cap = data, name, cap
        self.position = 0  # in the compressed data
        self.out = bytearray()
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def upto(self, end: int) -> bytes:
        """The stream's bytes up to `end` (fewer at its end), decompressing what is needed."""
        while len(self.out) < end and self._more(end):
            if len(self.out) > self.cap:
                raise ArchiveError(
                    f"{self.name}: decompresses to more than {self.cap} bytes of tar"
                )
        return bytes(self.out[:end])

    def _more(self, end: int) -> bool:
        if self.inflate.eof:  # a further gzip member, as gzip reads them; else the end
            feed = self.inflate.unused_data or self._chunk()
            if not feed.startswith(GZIP_MAGIC):
                return False
            self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        else:
            feed = self.inflate.unconsumed_tail or self._chunk()
            if not feed:
                return False
        wanted = min(end, self.cap + 1) - len(self.out)
        self.out += self.inflate.decompress(feed, max(wanted, 1))
        return True

    def _chunk(self) -> bytes:
        chunk = self.data[self.position : self.position + GZIP_CHUNK]
        self.position += len(chunk)
        return chunk


def _scan_tar(data: bytes, name: str, limits: ArchiveLimits) -> tuple[bytes, frozenset[int]]:
    """Walks the tar headers as tarfile will (3.11), refusing at its header any extended
    header over `header_bytes`, a sparse file, and members or sizes past the caps; the
    stream walked (all tarfile will get) and the offsets of its members' headers."""
    stream = _Gunzip(data, name, limits.tar_bytes)
    offset = members = total = in_a_row = 0
    starts: set[int] = set()
    chain_start: int | None = None
    pax_size: int | None = None  # a PAX 'size' record for the next member
    long_name = ""
    while True:
        block = stream.upto(offset + BLOCK)[offset:]
        fields = _header_fields(block)
        if fields is None:  # end of archive, or where tarfile stops (or refuses)
            return stream.upto(offset + BLOCK), frozenset(starts)
        kind, size, entry = fields
        if chain_start is None and kind != tarfile.XGLTYPE:
            chain_start = offset  # tarfile gives a member the offset of its first header
        if kind in LONG_NAME_TYPES + PAX_TYPES:
            in_a_row += 1
            _refuse_extended(name, kind, size, in_a_row, limits)
            payload = stream.upto(offset + BLOCK + size)[offset + BLOCK :]
            if kind == tarfile.GNUTYPE_LONGNAME:
                long_name = payload.split(b"\0", 1)[0].decode("utf-8", "replace")
            elif kind in PAX_TYPES:
                records = _pax_records(payload, name)
                long_name = records.get("path", long_name)
                if "size" in records and kind != tarfile.XGLTYPE:
                    pax_size = _pax_number(records["size"], name)
            offset += BLOCK + _blocks(size)
            continue
        if kind == tarfile.GNUTYPE_SPARSE:
            raise ArchiveError(f"{name}/{long_name or entry}: sparse files are not allowed")
        members += 1
        if members > limits.files:
            raise ArchiveError(f"{name}: more than {limits.files} entries")
        size = size if pax_size is None else pax_size
        entry = long_name or entry
        starts.add(offset if chain_start is None else chain_start)
        chain_start, pax_size, long_name, in_a_row = None, None, "", 0
        offset += BLOCK
        if kind in NO_DATA_TYPES or (kind == tarfile.AREGTYPE and entry.endswith("/")):
            continue
        if size > limits.file_bytes:
            raise ArchiveError(f"{name}/{entry}: larger than {limits.file_bytes} bytes")
        total += size
        if total > limits.total_bytes:
            raise ArchiveError(f"{name}: files larger than {limits.total_bytes} bytes in all")
        offset += _blocks(size)


def _header_fields(block: bytes) -> tuple[bytes, int, str] | None:
    """A header block's type, size and name; None where tarfile stops reading (the end
    of the archive, a short or blank block, a bad checksum or number)."""
    if len(block) < BLOCK or block.count(0) == BLOCK:
        return None
    checksum, size = _tar_number(block[148:156]), _tar_number(block[124:136])
    if checksum is None or size is None or size < 0:
        return None
    unsigned = 256 + sum(struct.unpack_from("148B8x356B", block))
    signed = 256 + sum(struct.unpack_from("148b8x356b", block))
    if checksum not in (unsigned, signed):
        return None
    entry = _nul_ended(block[0:100])
    prefix = _nul_ended(block[345:500])
    if block[257:265] == POSIX_MAGIC and prefix:
        entry = f"{prefix}/{entry}"
    return block[156:157], size, entry


def _tar_number(field: bytes) -> int | None:
    """A numeric header field as tarfile reads it (octal, or GNU base-256)."""
    if field[0] in (0o200, 0o377):
        number = int.from_bytes(field[1:], "big")
        return number - 256 ** (len(field) - 1) if field[0] == 0o377 else number
    try:
        return int(field.split(b"\0", 1)[0].decode("ascii").strip() or "0", 8)
    except ValueError:
        return None


def _nul_ended(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode("utf-8", "replace")


def _blocks(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _refuse_extended(
    name: str, kind: bytes, size: int, in_a_row: int, limits: ArchiveLimits
) -> None:
    what = "a GNU long name" if kind in LONG_NAME_TYPES else "a PAX header"
    if size > limits.header_bytes:
        raise ArchiveError(
            f"{name}: {what} of {size} bytes (at most {limits.header_bytes} are allowed)"
        )
    if in_a_row > limits.headers_in_a_row:
        raise ArchiveError(
            f"{name}: more than {limits.headers_in_a_row} extended headers before one entry"
        )


def _pax_records(payload: bytes, name: str) -> dict[str, str]:
    """The `<length> <keyword>=<value>\\n` records of a (size-capped) PAX header, read in
    one linear pass; a malformed one, or GNU sparse records, are refused."""
    records: dict[str, str] = {}
    position = 0
    while position < len(payload) and payload[position] != 0:
        space = payload.find(b" ", position, position + 20)
        digits = payload[position:space] if space != -1 else b""
        if not digits.isdigit() or int(digits) <= space - position + 1:
            raise ArchiveError(f"{name}: damaged archive (a malformed PAX record)")
        record = payload[space + 1 : position + int(digits)]
        keyword, equals, value = record.partition(b"=")
        if not equals or not record.endswith(b"\n"):
            raise ArchiveError(f"{name}: damaged archive (a malformed PAX record)")
        key = keyword.decode("utf-8", "replace")
        if key.startswith("GNU.sparse"):
            raise ArchiveError(f"{name}: sparse files are not allowed")
        records[key] = value[:-1].decode("utf-8", "replace")
        position += int(digits)
    return records


def _pax_number(text: str, name: str) -> int:
    try:
        number = int(text)
    except ValueError:
        return 0  # as tarfile reads it
    if number < 0:
        raise ArchiveError(f"{name}: damaged archive (a negative PAX size)")
    return number


ZIP_CENTRAL = b"PK\x01\x02"
ZIP_CENTRAL_BYTES = 46
ZIP_END64 = b"PK\x06\x06"  # the zip64 end record's signature
ZIP_END64_BYTES = 56 + 20  # the zip64 end record and its locator
_ECD_SIGNATURE, _ECD_ENTRIES_TOTAL, _ECD_SIZE, _ECD_LOCATION = 0, 4, 5, 9  # zipfile's


def _scan_zip(data: bytes, name: str, limits: ArchiveLimits) -> None:
    """Walks a zip's central directory where zipfile will find it, refusing more entries
    than the cap (declared or present) and an extra field over `header_bytes`, before
    zipfile builds an entry for any of them; zipfile reports what is not a zip."""
    end_record = getattr(zipfile, "_EndRecData")(io.BytesIO(data))  # noqa: B009
    if end_record is None:
        return
    if end_record[_ECD_ENTRIES_TOTAL] > limits.files:
        raise ArchiveError(f"{name}: more than {limits.files} entries")
    size = end_record[_ECD_SIZE]
    start = end_record[_ECD_LOCATION] - size
    if end_record[_ECD_SIGNATURE] == ZIP_END64:
        start -= ZIP_END64_BYTES
    position, entries = max(start, 0), 0
    while position - start < size:
        header = data[position : position + ZIP_CENTRAL_BYTES]
        if len(header) < ZIP_CENTRAL_BYTES or not header.startswith(ZIP_CENTRAL):
            return
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", header, 28)
        entries += 1
        if entries > limits.files:
            raise ArchiveError(f"{name}: more than {limits.files} entries")
        if extra_length > limits.header_bytes:
            raise ArchiveError(
                f"{name}: a zip extra field of {extra_length} bytes "
                f"(at most {limits.header_bytes} are allowed)"
            )
        position += ZIP_CENTRAL_BYTES + name_length + extra_length + comment_length


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
