"""grader.authoring.archive against archives built to exhaust the reader (issue 31, item 2): the
CVE-2024-6232 PAX header, GNU long names, tar and zip bombs, a lying central directory,
and a reading child that runs out of its limits. Each is refused with a message naming
why; nothing here asserts a time (the child's CPU limit is what bounds one), the figures
are printed (pytest -s)."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from grader.authoring import archive, bounded
from grader.authoring.archive import (
    ArchiveError,
    ArchiveLimits,
    read_archive,
    read_folder,
    write_archive,
)

# Every archive here is read in the bounded child, a fresh interpreter (tests/lanes.py).
pytestmark = pytest.mark.processes

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
STATEMENT = "first-gradient/statement.md"
MiB = 1024 * 1024


def _header(name: str, kind: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    return info.tobuf(tarfile.USTAR_FORMAT)


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


def _extended(kind: bytes, payload: bytes, declared: int | None = None) -> bytes:
    """An extended header (GNU 'L'/'K' or PAX 'x'/'g') and then a small regular member."""
    size = len(payload) if declared is None else declared
    member = _header(STATEMENT, tarfile.REGTYPE, 5) + _padded(b"text\n")
    return _header("././@LongLink", kind, size) + _padded(payload) + member + b"\0" * 1024


def _gzip_stream(*parts: bytes, zeros: int = 0) -> bytes:
    """Gzip of the parts and then `zeros` NUL bytes, compressed a chunk at a time."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [squeeze.compress(part) for part in parts]
    chunk = b"\0" * MiB
    for _ in range(zeros // MiB):
        out.append(squeeze.compress(chunk))
    out.append(squeeze.compress(b"\0" * (zeros % MiB)) + squeeze.flush())
    return b"".join(out)


def _refusal(data: bytes, limits: ArchiveLimits = archive.DEFAULT_LIMITS) -> str:
    started = time.perf_counter()
    with pytest.raises(ArchiveError) as caught:
        read_archive(data, name="upload.tar.gz", limits=limits)
    print(f"\n{len(data)} bytes refused in {time.perf_counter() - started:.3f} s: {caught.value}")
    return str(caught.value)


def _cve_2024_6232(records: int) -> bytes:
    """A PAX header of `records` records '2 ' and one '=': tarfile 3.11.7's regex scans to
    the '=' again at each record, in quadratic time, after reading the header whole."""
    return gzip.compress(_extended(tarfile.XHDTYPE, b"2 " * records + b"="), mtime=0)


# -- extended headers ----------------------------------------------------------------------


def test_the_cve_2024_6232_pax_header_is_refused_by_its_size_before_it_is_parsed() -> None:
    data = _cve_2024_6232(64 * 1024)  # 303 bytes: 12.5 s and 4 GiB in tarfile 3.11.7

    message = _refusal(data)

    assert len(data) < 400
    assert "upload.tar.gz: a PAX header of 131073 bytes (at most 4096 are allowed)" in message


def test_a_pax_header_of_crafted_records_within_the_size_cap_is_read_as_damaged() -> None:
    message = _refusal(_cve_2024_6232(2_000))

    assert "malformed PAX record" in message


def test_a_128_kib_gnu_long_name_is_refused_by_its_size() -> None:
    long_name = ("first-gradient/" + "a" * 128 * 1024).encode()

    message = _refusal(gzip.compress(_extended(tarfile.GNUTYPE_LONGNAME, long_name)))

    assert f"a GNU long name of {len(long_name)} bytes (at most 4096 are allowed)" in message


def test_a_256_mib_declared_long_name_in_a_small_gzip_is_refused_at_its_header() -> None:
    header = _header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 256 * MiB)
    data = _gzip_stream(header, zeros=256 * MiB)

    message = _refusal(data)

    assert len(data) < 400_000
    assert f"a GNU long name of {256 * MiB} bytes" in message


def test_a_long_link_header_over_the_cap_is_refused_like_a_long_name() -> None:
    message = _refusal(gzip.compress(_extended(tarfile.GNUTYPE_LONGLINK, b"x" * 5_000)))

    assert "a GNU long name of 5000 bytes" in message


def test_a_chain_of_extended_headers_before_one_entry_is_refused() -> None:
    chain = b"".join(
        _header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 4) + _padded(b"abc\0") for _ in range(5)
    )

    message = _refusal(gzip.compress(chain + _extended(tarfile.GNUTYPE_LONGNAME, b"abc\0")))

    assert "more than 4 extended headers before one entry" in message


def test_a_long_name_and_a_pax_path_within_the_caps_are_read() -> None:
    name = "first-gradient/wrong/" + "w" * 200 + ".py"

    for form in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=form) as tar:
            info = tarfile.TarInfo(name)
            info.size = 6
            tar.addfile(info, io.BytesIO(b"x = 1\n"))

        assert read_archive(gzip.compress(raw.getvalue())) == {name: "x = 1\n"}


def test_a_global_pax_header_as_git_archive_writes_it_is_read() -> None:
    comment = b"52 comment=0123456789abcdef0123456789abcdef01234567\n"
    data = _header("pax_global_header", tarfile.XGLTYPE, len(comment)) + _padded(comment)
    data += _header(STATEMENT, tarfile.REGTYPE, 3) + _padded(b"hi\n") + b"\0" * 1024

    assert read_archive(gzip.compress(data)) == {STATEMENT: "hi\n"}


def test_a_pax_size_record_moves_the_walk_as_it_moves_tarfile() -> None:
    body = b"# the statement\n"
    size = f"size={len(body)}\n".encode()
    record = f"{len(size) + 3} ".encode() + size
    data = _header("./PaxHeaders/x", tarfile.XHDTYPE, len(record)) + _padded(record)
    data += _header(STATEMENT, tarfile.REGTYPE, 0) + _padded(body) + b"\0" * 1024

    assert read_archive(gzip.compress(data)) == {STATEMENT: body.decode()}


# -- bombs -----------------------------------------------------------------------------------


def test_a_tar_bomb_of_many_small_members_is_refused_by_its_headers() -> None:
    member = _header(STATEMENT, tarfile.REGTYPE, 0)
    data = _gzip_stream(member * 20_000)  # 10 MB of headers, about 45 kB compressed

    message = _refusal(data)

    assert "upload.tar.gz: more than 1000 entries" in message


def test_a_tar_stream_past_its_cap_is_refused_as_a_decompression_bomb() -> None:
    members = [_header(f"first-gradient/wrong/w{i}.py", tarfile.REGTYPE, 0) for i in range(800)]
    limits = ArchiveLimits(tar_bytes=100_000)

    message = _refusal(_gzip_stream(*members), limits)

    assert "decompresses to more than 100000 bytes of tar" in message


def test_a_tar_member_declaring_a_gigabyte_is_refused_at_its_header() -> None:
    data = _gzip_stream(_header(STATEMENT, tarfile.REGTYPE, 1024 * MiB), zeros=64 * MiB)

    assert f"{STATEMENT}: larger than 512000 bytes" in _refusal(data)


def test_a_zip_bomb_is_refused_by_its_declared_size() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as handle:
        handle.writestr(STATEMENT, b"\0" * 100 * MiB)

    message = _refusal(out.getvalue())

    assert len(out.getvalue()) < 200_000
    assert f"{STATEMENT}: larger than 512000 bytes" in message


def test_a_zip_bomb_that_lies_about_its_size_is_refused_as_damaged() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as handle:
        handle.writestr(STATEMENT, b"#" * 100 * MiB)
    data = bytearray(out.getvalue())
    for signature, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # uncompressed size
        struct.pack_into("<I", data, data.index(signature) + at, 100)

    assert "damaged archive (Bad CRC-32" in _refusal(bytes(data))


def test_a_central_directory_of_more_entries_than_the_cap_is_refused_before_it_is_parsed() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as handle:
        for i in range(30):
            handle.writestr(f"first-gradient/wrong/w{i}.py", b"")
    data = bytearray(out.getvalue())
    end = data.rindex(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 1, 1)  # the end record claims one entry

    message = _refusal(bytes(data), ArchiveLimits(files=20))

    assert "more than 20 entries" in message


def test_a_zip_extra_field_over_the_cap_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as handle:
        info = zipfile.ZipInfo(STATEMENT)
        info.extra = b"\xfe\xca\x00\x00" * 5_000  # 5,000 empty fields: zipfile's slow path
        handle.writestr(info, b"# Hi\n")

    assert "a zip extra field of 20000 bytes (at most 4096 are allowed)" in _refusal(out.getvalue())


# -- the bounded child ------------------------------------------------------------------------


def test_a_child_out_of_memory_is_refused_within_its_limits() -> None:
    data = write_archive(read_folder(EXERCISES), "tar.gz")

    message = _refusal(data, ArchiveLimits(memory_bytes=16 * MiB))

    assert message.startswith(f"upload.tar.gz: {archive.LIMITS_REFUSAL} (")


@pytest.mark.parametrize(
    ("code", "limits", "reason"),
    [
        (b"sum(range(10**12))", bounded.ProcessLimits(cpu_seconds=1), "1 s of CPU time"),
        (b"bytearray(2**30)", bounded.ProcessLimits(memory_bytes=256 * MiB), "out of memory"),
        (b"__import__('time').sleep(60)", bounded.ProcessLimits(wall_seconds=0.5), "0.5 s"),
        (b"'x' * 10**6", bounded.ProcessLimits(reply_bytes=1_000), "more than 1000 bytes"),
        (b"__import__('os').abort()", bounded.ProcessLimits(), "ended with status -6"),
    ],
)
def test_a_child_past_a_limit_or_crashing_ends_in_a_bounded_error_naming_it(
    code: bytes, limits: bounded.ProcessLimits, reason: str
) -> None:
    with pytest.raises(bounded.BoundedError, match=reason):
        bounded.run("builtins:eval", code, {}, limits)


def test_a_child_answers_json_only() -> None:
    assert bounded.run("builtins:eval", b"{'a': [1, 'b']}", {}, bounded.ProcessLimits()) == {
        "a": [1, "b"]
    }


def test_a_normal_course_archive_is_read_through_the_child_unchanged() -> None:
    files = read_folder(EXERCISES)
    for kind in archive.FORMATS:
        data = write_archive(files, kind)

        started = time.perf_counter()
        bounded_files = read_archive(data)
        child = time.perf_counter() - started
        started = time.perf_counter()
        here = archive.read_archive_here(data)
        alone = time.perf_counter() - started
        print(f"\n{kind}: {len(data)} bytes, child {child:.3f} s, in process {alone:.3f} s")

        assert bounded_files == here == files
