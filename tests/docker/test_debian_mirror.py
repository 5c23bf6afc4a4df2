"""docker/lib.sh's debian_mirror: the mirror apt is configured with, in either sources
format, or a clear failure; never a host of our own choosing."""

from __future__ import annotations

import subprocess
from pathlib import Path

from docker_helpers import ROOT


def debian_mirror(tmp_path: Path, sources: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs debian_mirror with an apt configuration whose only sources are `sources`."""
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    for name, text in sources.items():
        (parts / name).write_text(text)
    (tmp_path / "sources.list").write_text("")
    config = tmp_path / "apt.conf"
    config.write_text(
        f'Dir::Etc::sourcelist "{tmp_path}/sources.list";\nDir::Etc::sourceparts "{parts}";\n'
    )
    return subprocess.run(
        ["bash", "-c", "source docker/lib.sh && debian_mirror"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "APT_CONFIG": str(config)},
    )


def test_the_mirror_comes_from_a_one_line_list_file(tmp_path: Path) -> None:
    done = debian_mirror(
        tmp_path,
        {
            "security.list": "deb http://sec.example.org/debian-security bookworm-security main\n",
            "debian.list": "deb http://one-line.example.org/debian bookworm main contrib\n",
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "http://one-line.example.org/debian"


def test_the_mirror_comes_from_a_deb822_sources_file(tmp_path: Path) -> None:
    stanza = (
        "Types: deb\nURIs: http://deb822.example.org/debian/\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n"
    )
    done = debian_mirror(tmp_path, {"debian.sources": stanza})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "http://deb822.example.org/debian"


def test_no_bookworm_mirror_in_apt_fails_with_a_clear_message(tmp_path: Path) -> None:
    done = debian_mirror(
        tmp_path, {"other.list": "deb http://elsewhere.example.org/debian trixie main\n"}
    )
    assert done.returncode != 0
    assert done.stdout == ""
    assert "no Debian bookworm mirror in apt's configuration" in done.stderr
    assert "deb.debian.org" not in done.stdout + done.stderr
