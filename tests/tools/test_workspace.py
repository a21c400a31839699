"""The workspace: path confinement, protected paths, and file I/O that never damages a file."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from codecompanion_py.errors import PathRefused, ToolError
from codecompanion_py.tools.workspace import FileText, Target, Workspace, sha256_of


@dataclass
class Project:
    root: Path
    outside: Path
    ws: Workspace


@pytest.fixture
def proj(tmp_path: Path) -> Project:
    root = tmp_path / "proj"
    outside = tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"top secret\n")
    (outside / "shared.txt").write_bytes(b"shared outside\n")
    (root / "src" / "a.py").write_bytes(b"print('hi')\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (root / "nofinal.txt").write_bytes(b"one\ntwo")
    (root / "binary.bin").write_bytes(b"\x89PNG\x00\x01\x02abc")
    (root / "latin1.txt").write_bytes(b"caf\xe9\n")
    (root / "empty.txt").write_bytes(b"")
    os.mkfifo(root / "fifo")
    os.symlink("src/a.py", root / "link_in")
    os.symlink(outside / "secret.txt", root / "link_out")
    os.symlink(outside, root / "dirlink_out")
    os.symlink(outside / "missing", root / "dangling_out")
    os.symlink(root / "nothing_here.txt", root / "dangling_in")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.link(outside / "shared.txt", root / "hardlink.txt")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_bytes(b"[core]\n")
    (root / "sub").mkdir()
    (root / "sub" / ".git").write_bytes(b"gitdir: ../.git\n")
    (root / ".env.local").write_bytes(b"TOKEN=abc\n")
    (root / "id_rsa").write_bytes(b"-----BEGIN KEY-----\n")
    os.symlink(".env.local", root / "innocent")
    (tmp_path / "proj-evil").mkdir()
    (tmp_path / "proj-evil" / "x").write_bytes(b"evil\n")
    return Project(root, outside, Workspace(root))


def refused(ws: Workspace, raw: object) -> str:
    with pytest.raises(PathRefused) as info:
        ws.resolve(raw)  # type: ignore[arg-type]
    return str(info.value)


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and not p.is_symlink()}


# -- resolve: refusals ---------------------------------------------------------------------


def test_path_refused_is_a_tool_error() -> None:
    assert issubclass(PathRefused, ToolError)


def test_root_is_resolved_with_realpath(proj: Project, tmp_path: Path) -> None:
    os.symlink(proj.root, tmp_path / "alias")
    assert Workspace(tmp_path / "alias").root == Path(os.path.realpath(proj.root))


@pytest.mark.parametrize("raw", ["", None, 42, b"src/a.py"])
def test_refuses_empty_and_non_string(proj: Project, raw: object) -> None:
    assert "relative to the project root" in refused(proj.ws, raw)


@pytest.mark.parametrize(
    "raw",
    ["src/a\0.py", "src/a\n.py", "src/\x1b[31ma.py", "src/a\u202e.py", "src/a\u200b.py", "src/\ufeffa.py", "a\u2028b"],
)
def test_refuses_control_and_invisible_characters(proj: Project, raw: str) -> None:
    message = refused(proj.ws, raw)
    assert "U+" in message and "visible" in message
    bad = next(ch for ch in raw if ch not in "srca./pyb[31m")
    assert bad not in message


@pytest.mark.parametrize("raw", ["..\\x", "C:\\x", "src\\a.py", "C:/Windows/x"])
def test_refuses_windows_paths(proj: Project, raw: str) -> None:
    assert "'/'" in refused(proj.ws, raw)


def test_refuses_overlong_path(proj: Project) -> None:
    message = refused(proj.ws, "a/" * 2048 + "b")
    assert "4097" in message and "4096" in message
    with pytest.raises(PathRefused) as info:  # 4096 characters pass the length check, not the OS's
        proj.ws.resolve("a/" * 2047 + "bc")
    assert "the limit is" not in str(info.value) and "too long" in str(info.value)
    assert len(str(info.value)) < 500  # a long path is not echoed in full


@pytest.mark.parametrize("raw", ["~/x", "~", "~root/.bashrc", "$HOME/x", "${HOME}/x", "src/$USER.txt", "$(pwd)/x"])
def test_refuses_home_and_variables_without_expanding(proj: Project, raw: str) -> None:
    message = refused(proj.ws, raw)
    assert "not expanded" in message and "relative to the project root" in message
    assert f"'{raw}'" in message  # shown as sent, not expanded


@pytest.mark.parametrize(
    "raw",
    [
        "../x",
        "a/../../x",
        "./././../x",
        "src/../../outside/secret.txt",
        "/etc/passwd",
        "//etc/passwd",
        "///etc/passwd",
        "/",
    ],
)
def test_refuses_paths_outside_the_root(proj: Project, raw: str) -> None:
    message = refused(proj.ws, raw)
    assert f"'{raw}' is outside the project root {proj.root}" in message
    assert "use a path relative to the project root" in message


def test_refuses_absolute_path_elsewhere(proj: Project) -> None:
    assert "outside the project root" in refused(proj.ws, str(proj.outside / "secret.txt"))


@pytest.mark.parametrize("suffix", ["-evil/x", "backup/x", "-evil/../proj-evil/x"])
def test_refuses_sibling_sharing_the_root_as_string_prefix(proj: Project, suffix: str) -> None:
    assert "outside the project root" in refused(proj.ws, f"{proj.root}{suffix}")
    assert "outside the project root" in refused(proj.ws, f"../proj{suffix}")


def test_refuses_final_symlink_pointing_outside(proj: Project) -> None:
    message = refused(proj.ws, "link_out")
    assert "symlink" in message and "outside the project root" in message
    assert "top secret" not in message


@pytest.mark.parametrize("raw", ["dirlink_out/secret.txt", "dirlink_out/new.txt", "dirlink_out"])
def test_refuses_directory_symlink_pointing_outside(proj: Project, raw: str) -> None:
    assert "symlink" in refused(proj.ws, raw)


@pytest.mark.parametrize("raw", ["dangling_out", "dangling_in", "dangling_in/x"])
def test_refuses_dangling_symlinks_wherever_they_point(proj: Project, raw: str) -> None:
    message = refused(proj.ws, raw)
    assert "symlink whose target does not exist" in message
    assert not (proj.root / "nothing_here.txt").exists()


def test_refuses_symlink_loop(proj: Project) -> None:
    assert "symlink" in refused(proj.ws, "loop_a")


def test_refuses_a_file_used_as_directory(proj: Project) -> None:
    assert "which is a file, not a directory" in refused(proj.ws, "src/a.py/x")


def test_refuses_trailing_slash_on_a_file(proj: Project) -> None:
    assert "ends with '/'" in refused(proj.ws, "src/a.py/")
    assert "ends with '/'" in refused(proj.ws, "new/")


def test_refuses_symlink_located_outside_even_if_it_points_inside(proj: Project) -> None:
    os.symlink(proj.root / "src" / "a.py", proj.outside / "points_in")
    assert "symlink outside the project root" in refused(proj.ws, str(proj.outside / "points_in"))


# -- resolve: accepted paths ----------------------------------------------------------------


def test_resolves_relative_path(proj: Project) -> None:
    target = proj.ws.resolve("src/a.py")
    assert target == Target("src/a.py", "src/a.py", proj.root / "src" / "a.py", True, None, None)


@pytest.mark.parametrize("raw", ["./src/a.py", "src//a.py", "src/./a.py", "new/../src/a.py", "../proj/src/a.py"])
def test_normalises_equivalent_spellings(proj: Project, raw: str) -> None:
    target = proj.ws.resolve(raw)
    assert (target.relative, target.real, target.exists) == ("src/a.py", proj.root / "src" / "a.py", True)


def test_accepts_absolute_path_inside_the_root(proj: Project) -> None:
    target = proj.ws.resolve(str(proj.root / "src" / "a.py"))
    assert (target.relative, target.real, target.exists) == ("src/a.py", proj.root / "src" / "a.py", True)


def test_missing_file_resolves_to_real_parent_and_name(proj: Project) -> None:
    target = proj.ws.resolve("new/dir/f.txt")
    assert (target.relative, target.real, target.exists, target.protected) == (
        "new/dir/f.txt",
        proj.root / "new" / "dir" / "f.txt",
        False,
        None,
    )


def test_symlink_inside_resolves_to_its_target(proj: Project) -> None:
    target = proj.ws.resolve("link_in")
    assert target.real == proj.root / "src" / "a.py"
    assert target.relative == "link_in"
    assert target.link == proj.root / "link_in"
    assert target.exists


def test_directory_symlink_inside_is_followed(proj: Project) -> None:
    os.symlink("src", proj.root / "srclink")
    target = proj.ws.resolve("srclink/a.py")
    assert target.real == proj.root / "src" / "a.py" and target.link is None


# -- resolve: protected paths ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (".git/config", "inside .git"),
        (".GIT/config", "inside .git"),
        (".git", "inside .git"),
        ("sub/.git", "inside .git"),
        (".env", "an environment file (.env*)"),
        (".env.local", "an environment file (.env*)"),
        ("deploy/.ENV.Production", "an environment file (.env*)"),
        ("innocent", "an environment file (.env*)"),  # a symlink to .env.local
        ("certs/server.pem", "a private key"),
        ("tls.KEY", "a private key"),
        ("id_rsa", "a private key"),
        ("id_rsa.pub", "a private key"),
        ("keys/id_ed25519", "a private key"),
        ("id_ecdsa", "a private key"),
        (".netrc", "a credentials file (.netrc)"),
        (".npmrc", "a credentials file (.npmrc)"),
        (".pypirc", "a credentials file (.pypirc)"),
        (".ssh/config", "inside .ssh"),
        ("home/.SSH/authorized_keys", "inside .ssh"),
        (".codecompanion/settings.json", "inside .codecompanion"),
        ("hardlink.txt", "a file with other hard links"),
    ],
)
def test_protected_paths_are_accepted_but_flagged(proj: Project, raw: str, reason: str) -> None:
    assert proj.ws.resolve(raw).protected == reason


@pytest.mark.parametrize(
    "raw",
    [
        "src/a.py",
        "environment.py",
        ".environment",
        ".envrc_not",
        "keys.txt",
        "my.keys",
        "gitignore",
        ".github/workflows/ci.yml",
        "not_id_rsa",
    ],
)
def test_ordinary_paths_are_not_protected(proj: Project, raw: str) -> None:
    assert proj.ws.resolve(raw).protected is None


def test_hard_link_count_is_checked_on_the_real_file(proj: Project) -> None:
    os.unlink(proj.outside / "shared.txt")
    assert proj.ws.resolve("hardlink.txt").protected is None


# -- read_text ------------------------------------------------------------------------------


def test_reads_text_and_hash(proj: Project) -> None:
    read = proj.ws.read_text(proj.ws.resolve("src/a.py"))
    data = b"print('hi')\n"
    assert read == FileText(
        "print('hi')\n",
        "\n",
        True,
        hashlib.sha256(data).hexdigest(),
        stat.S_IMODE(os.stat(proj.root / "src" / "a.py").st_mode),
    )
    assert sha256_of(data) == hashlib.sha256(data).hexdigest()


def test_reads_crlf_and_missing_final_newline(proj: Project) -> None:
    crlf = proj.ws.read_text(proj.ws.resolve("crlf.txt"))
    assert (crlf.text, crlf.newline, crlf.final_newline) == ("one\ntwo\nthree\n", "\r\n", True)
    nofinal = proj.ws.read_text(proj.ws.resolve("nofinal.txt"))
    assert (nofinal.text, nofinal.newline, nofinal.final_newline) == ("one\ntwo", "\n", False)


def test_newline_is_the_majority(proj: Project) -> None:
    (proj.root / "mixed.txt").write_bytes(b"a\r\nb\nc\n")
    assert proj.ws.read_text(proj.ws.resolve("mixed.txt")).newline == "\n"


def test_reads_empty_file(proj: Project) -> None:
    read = proj.ws.read_text(proj.ws.resolve("empty.txt"))
    assert (read.text, read.final_newline, read.sha256) == ("", False, sha256_of(b""))


def test_reads_through_an_inside_symlink(proj: Project) -> None:
    assert proj.ws.read_text(proj.ws.resolve("link_in")).text == "print('hi')\n"


def test_refuses_binary_file(proj: Project) -> None:
    with pytest.raises(PathRefused, match="binary"):
        proj.ws.read_text(proj.ws.resolve("binary.bin"))


def test_refuses_invalid_utf8(proj: Project) -> None:
    with pytest.raises(PathRefused, match="not valid UTF-8.*offset 3"):
        proj.ws.read_text(proj.ws.resolve("latin1.txt"))


def test_refuses_file_above_the_size_limit(proj: Project) -> None:
    with pytest.raises(PathRefused) as info:
        proj.ws.read_text(proj.ws.resolve("crlf.txt"), max_bytes=10)
    assert "is 17 bytes" in str(info.value) and "10-byte limit" in str(info.value)
    assert "one" not in str(info.value)
    assert proj.ws.read_text(proj.ws.resolve("crlf.txt"), max_bytes=17).text == "one\ntwo\nthree\n"


def read_without_hanging(ws: Workspace, target: Target, fifo: Path) -> BaseException | FileText:
    """read_text in a thread; fail (never hang) if it blocks on the FIFO."""
    outcome: list[BaseException | FileText] = []

    def read() -> None:
        try:
            outcome.append(ws.read_text(target))
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            outcome.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(timeout=10)
    if thread.is_alive():  # unblock the reader so the test process does not stay stuck
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("read_text blocked on a FIFO")
    assert len(outcome) == 1
    return outcome[0]


def test_reading_a_fifo_refuses_without_hanging(proj: Project) -> None:
    outcome = read_without_hanging(proj.ws, proj.ws.resolve("fifo"), proj.root / "fifo")
    assert isinstance(outcome, PathRefused) and "named pipe (FIFO)" in str(outcome)


def test_refuses_reading_directory_and_missing_file(proj: Project) -> None:
    with pytest.raises(PathRefused, match="is a directory"):
        proj.ws.read_text(proj.ws.resolve("src"))
    with pytest.raises(PathRefused, match="does not exist"):
        proj.ws.read_text(proj.ws.resolve("src/missing.py"))
    with pytest.raises(PathRefused, match="not a file inside the project root"):
        proj.ws.read_text(proj.ws.resolve("."))


def test_read_refuses_a_file_swapped_for_a_fifo_after_resolve(proj: Project) -> None:
    target = proj.ws.resolve("src/a.py")
    os.unlink(proj.root / "src" / "a.py")
    os.mkfifo(proj.root / "src" / "a.py")
    outcome = read_without_hanging(proj.ws, target, proj.root / "src" / "a.py")
    assert isinstance(outcome, PathRefused) and "FIFO" in str(outcome)


# -- write_text -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["crlf.txt", "nofinal.txt", "src/a.py", "empty.txt"])
def test_read_write_round_trip_is_byte_identical(proj: Project, name: str) -> None:
    before = (proj.root / name).read_bytes()
    target = proj.ws.resolve(name)
    read = proj.ws.read_text(target)
    written = proj.ws.write_text(
        target, read.text, expected_sha256=read.sha256, newline=read.newline, final_newline=read.final_newline
    )
    assert (proj.root / name).read_bytes() == before
    assert written.sha256 == read.sha256


def test_edit_keeps_crlf_line_endings(proj: Project) -> None:
    target = proj.ws.resolve("crlf.txt")
    read = proj.ws.read_text(target)
    written = proj.ws.write_text(
        target,
        read.text.replace("two", "2\nand a half"),
        expected_sha256=read.sha256,
        newline=read.newline,
        final_newline=read.final_newline,
    )
    assert (proj.root / "crlf.txt").read_bytes() == b"one\r\n2\r\nand a half\r\nthree\r\n"
    assert written == FileText(
        "one\n2\nand a half\nthree\n", "\r\n", True, sha256_of(b"one\r\n2\r\nand a half\r\nthree\r\n"), written.mode
    )


@pytest.mark.parametrize(
    ("text", "final", "expected"),
    [
        ("a\nb", True, b"a\nb\n"),
        ("a\nb\n", True, b"a\nb\n"),
        ("a\nb\n", False, b"a\nb"),
        ("a\nb\n\n", False, b"a\nb\n"),
        ("a\nb", False, b"a\nb"),
        ("a\nb\n\n", None, b"a\nb\n\n"),
        ("a\nb", None, b"a\nb"),
    ],
)
def test_final_newline(proj: Project, text: str, final: bool | None, expected: bytes) -> None:
    proj.ws.write_text(proj.ws.resolve("src/a.py"), text, final_newline=final)
    assert (proj.root / "src" / "a.py").read_bytes() == expected


def test_write_keeps_the_mode(proj: Project) -> None:
    path = proj.root / "src" / "a.py"
    os.chmod(path, 0o755)
    written = proj.ws.write_text(proj.ws.resolve("src/a.py"), "#!/bin/sh\n")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755 == written.mode
    assert path.read_bytes() == b"#!/bin/sh\n"


def test_write_new_file_uses_0644_minus_umask(proj: Project) -> None:
    old = os.umask(0o027)
    try:
        written = proj.ws.write_text(proj.ws.resolve("src/new.py"), "x = 1\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(proj.root / "src" / "new.py").st_mode) == 0o640 == written.mode


def test_hash_mismatch_refuses_before_writing(proj: Project) -> None:
    before = snapshot(proj.root)
    target = proj.ws.resolve("crlf.txt")
    with pytest.raises(PathRefused, match="changed since it was read; read it again"):
        proj.ws.write_text(target, "clobbered\n", expected_sha256=sha256_of(b"something else"))
    assert snapshot(proj.root) == before


def test_hash_given_for_a_file_that_vanished_refuses(proj: Project) -> None:
    target = proj.ws.resolve("src/a.py")
    read = proj.ws.read_text(target)
    os.unlink(proj.root / "src" / "a.py")
    with pytest.raises(PathRefused, match="changed since it was read"):
        proj.ws.write_text(target, "x\n", expected_sha256=read.sha256)
    assert not (proj.root / "src" / "a.py").exists()


def test_failure_mid_write_leaves_original_and_no_temp_file(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(proj.root)
    names = sorted(os.listdir(proj.root))

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(PathRefused, match="could not write 'crlf.txt'.*left unchanged"):
        proj.ws.write_text(proj.ws.resolve("crlf.txt"), "new content\n")
    assert snapshot(proj.root) == before
    assert sorted(os.listdir(proj.root)) == names


def test_parent_swapped_for_symlink_after_resolve_is_refused(proj: Project) -> None:
    (proj.root / "pkg").mkdir()
    (proj.root / "pkg" / "file.txt").write_bytes(b"inside\n")
    (proj.outside / "file.txt").write_bytes(b"outside\n")
    target = proj.ws.resolve("pkg/file.txt")
    os.rename(proj.root / "pkg", proj.root / "pkg_moved")
    os.symlink(proj.outside, proj.root / "pkg")
    outside_before = snapshot(proj.outside)
    outside_names = sorted(os.listdir(proj.outside))
    with pytest.raises(PathRefused, match="changed after it was checked"):
        proj.ws.write_text(target, "pwned\n")
    with pytest.raises(PathRefused, match="changed after it was checked"):
        proj.ws.read_text(target)
    with pytest.raises(PathRefused, match="changed after it was checked"):
        proj.ws.delete(target)
    assert snapshot(proj.outside) == outside_before
    assert sorted(os.listdir(proj.outside)) == outside_names


def test_final_component_swapped_for_symlink_is_refused(proj: Project) -> None:
    target = proj.ws.resolve("src/a.py")
    os.unlink(proj.root / "src" / "a.py")
    os.symlink(proj.outside / "secret.txt", proj.root / "src" / "a.py")
    with pytest.raises(PathRefused, match="symlink"):
        proj.ws.write_text(target, "pwned\n")
    with pytest.raises(PathRefused, match="symlink"):
        proj.ws.read_text(target)
    assert (proj.outside / "secret.txt").read_bytes() == b"top secret\n"
    assert os.path.islink(proj.root / "src" / "a.py")


def test_final_component_swapped_for_symlink_during_write_is_refused(
    proj: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = proj.ws.resolve("src/a.py")
    real_fsync = os.fsync

    def swap_then_fsync(fd: int) -> None:  # runs after the temp file is written, before the rename
        if not os.path.islink(proj.root / "src" / "a.py"):
            os.unlink(proj.root / "src" / "a.py")
            os.symlink(proj.outside / "secret.txt", proj.root / "src" / "a.py")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", swap_then_fsync)
    with pytest.raises(PathRefused, match="became a symlink"):
        proj.ws.write_text(target, "pwned\n")
    assert os.readlink(proj.root / "src" / "a.py") == str(proj.outside / "secret.txt")
    assert (proj.outside / "secret.txt").read_bytes() == b"top secret\n"
    assert sorted(os.listdir(proj.root / "src")) == ["a.py"]


def test_writing_a_hard_linked_file_leaves_the_other_name_unchanged(proj: Project) -> None:
    target = proj.ws.resolve("hardlink.txt")
    assert target.protected == "a file with other hard links"
    proj.ws.write_text(target, "new inside\n")
    assert (proj.outside / "shared.txt").read_bytes() == b"shared outside\n"
    assert (proj.root / "hardlink.txt").read_bytes() == b"new inside\n"
    assert os.stat(proj.outside / "shared.txt").st_nlink == 1


def test_writing_through_inside_symlink_writes_the_target_and_keeps_the_link(proj: Project) -> None:
    proj.ws.write_text(proj.ws.resolve("link_in"), "print('bye')\n")
    assert os.path.islink(proj.root / "link_in")
    assert (proj.root / "src" / "a.py").read_bytes() == b"print('bye')\n"


def test_write_does_not_create_directories(proj: Project) -> None:
    with pytest.raises(PathRefused, match="does not exist"):
        proj.ws.write_text(proj.ws.resolve("nope/f.txt"), "x\n")
    assert not (proj.root / "nope").exists()


def test_write_refuses_directory_and_fifo(proj: Project) -> None:
    with pytest.raises(PathRefused, match="is a directory"):
        proj.ws.write_text(proj.ws.resolve("src"), "x\n")
    with pytest.raises(PathRefused, match="FIFO"):
        proj.ws.write_text(proj.ws.resolve("fifo"), "x\n")
    assert stat.S_ISFIFO(os.lstat(proj.root / "fifo").st_mode)


def test_write_refuses_unencodable_text(proj: Project) -> None:
    with pytest.raises(PathRefused, match="UTF-8"):
        proj.ws.write_text(proj.ws.resolve("src/a.py"), "bad \ud800\n")
    assert (proj.root / "src" / "a.py").read_bytes() == b"print('hi')\n"


# -- create_text ----------------------------------------------------------------------------


def test_create_makes_parent_directories(proj: Project) -> None:
    created = proj.ws.create_text(proj.ws.resolve("new/deep/f.txt"), "hello\n")
    assert (proj.root / "new" / "deep" / "f.txt").read_bytes() == b"hello\n"
    assert created.sha256 == sha256_of(b"hello\n") and created.final_newline


def test_create_refuses_existing_file(proj: Project) -> None:
    with pytest.raises(PathRefused, match="already exists; use insert_edit_into_file"):
        proj.ws.create_text(proj.ws.resolve("src/a.py"), "clobbered\n")
    assert (proj.root / "src" / "a.py").read_bytes() == b"print('hi')\n"


def test_create_refuses_file_that_appeared_after_resolve(proj: Project) -> None:
    target = proj.ws.resolve("src/late.py")
    (proj.root / "src" / "late.py").write_bytes(b"mine\n")
    with pytest.raises(PathRefused, match="already exists"):
        proj.ws.create_text(target, "theirs\n")
    assert (proj.root / "src" / "late.py").read_bytes() == b"mine\n"


def test_create_refuses_parent_that_became_a_symlink(proj: Project) -> None:
    target = proj.ws.resolve("newdir/f.txt")
    os.symlink(proj.outside, proj.root / "newdir")
    with pytest.raises(PathRefused, match="changed after it was checked"):
        proj.ws.create_text(target, "pwned\n")
    assert not (proj.outside / "f.txt").exists()


def test_create_refuses_final_name_that_became_a_symlink(proj: Project) -> None:
    target = proj.ws.resolve("src/new.py")
    os.symlink(proj.outside / "created_outside", proj.root / "src" / "new.py")
    with pytest.raises(PathRefused, match="already exists"):
        proj.ws.create_text(target, "pwned\n")
    assert not (proj.outside / "created_outside").exists()


# -- delete ---------------------------------------------------------------------------------


def test_delete_regular_file(proj: Project) -> None:
    proj.ws.delete(proj.ws.resolve("src/a.py"))
    assert not (proj.root / "src" / "a.py").exists()


def test_delete_symlink_removes_the_link_not_its_target(proj: Project) -> None:
    proj.ws.delete(proj.ws.resolve("link_in"))
    assert not os.path.lexists(proj.root / "link_in")
    assert (proj.root / "src" / "a.py").read_bytes() == b"print('hi')\n"


def test_delete_refuses_directory_fifo_and_missing(proj: Project) -> None:
    with pytest.raises(PathRefused, match="is a directory"):
        proj.ws.delete(proj.ws.resolve("src"))
    with pytest.raises(PathRefused, match="FIFO"):
        proj.ws.delete(proj.ws.resolve("fifo"))
    with pytest.raises(PathRefused, match="does not exist"):
        proj.ws.delete(proj.ws.resolve("src/missing.py"))
    assert (proj.root / "src").is_dir() and stat.S_ISFIFO(os.lstat(proj.root / "fifo").st_mode)


def test_delete_of_a_hard_link_keeps_the_outside_file(proj: Project) -> None:
    proj.ws.delete(proj.ws.resolve("hardlink.txt"))
    assert (proj.outside / "shared.txt").read_bytes() == b"shared outside\n"
