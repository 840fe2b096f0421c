"""The attack suite's cases and the machinery that runs them (issue 9).

Each :class:`Case` is one hostile tool call against one hostile tree. It is run twice:

- ``tool``: through ``outrider.run_tool(root, tool, args, timeout=...)``;
- ``child``: through a whole child launch whose :class:`outrider.testing.ScriptedLLM` issues the
  same call and then a final answer citing evidence built from the case's path, so the completion
  gate's evidence check is attacked too.

Every run is checked for: no outside content and no outside name in any output (the envelope,
the child's result, its repr, its trace, every request the model received), an answer within the
time limit plus 0.5 s, no exception, the expected error code where the call is refused, and the
explored tree byte-for-byte as before (every file's bytes, mode, size and mtime, every symlink's
target, every directory's mtime, so nothing was created even for a moment).

``tests/test_attack.py`` parametrizes pytest over :data:`CASES`; ``bench/attack.py`` runs them all
and prints the figures the README quotes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import socket
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import outrider
from outrider.testing import ScriptedLLM, call, final

# Planted outside every explored root; none of them may appear in any output.
MARK_CONTENT = "ATTACK-OUTSIDE-CONTENT-5c1e"
MARK_NAME = "attack-outside-name-9b7d"
MARKERS = (MARK_CONTENT, MARK_NAME, "root:x:0:0")
# Inside the hostile tree only through a hardlink: a hardlink is the same file, so it is inside.
HARDLINKED = "HARDLINKED-INSIDE-CONTENT"

OK = "ok"  # the outcome of a call that did not end in an error envelope
ANY = frozenset({"*"})  # any clear outcome (which one is implementation-defined)
SLACK = 0.5  # how far past its limit a call may answer


# --- Trees ------------------------------------------------------------------------------------


def plant_outside(base: pathlib.Path) -> pathlib.Path:
    """The outside world beside every root: marker files, a fake git dir, a common dir."""
    outside = base / "outside"
    if outside.exists():
        return outside
    (outside / "sub").mkdir(parents=True)
    (outside / f"{MARK_NAME}.txt").write_text(f"{MARK_CONTENT}\nvisible.txt\n")
    (outside / "sub" / f"{MARK_NAME}-deep.txt").write_text(f"{MARK_CONTENT} deep\n")
    (outside / "ignore-rules").write_text("visible.txt\n*.py\n*.md\n")
    (outside / "hard-target.txt").write_text(f"{HARDLINKED}\n")
    gitdir = outside / "gitdir"
    (gitdir / "info").mkdir(parents=True)
    (gitdir / "info" / "exclude").write_text("visible.txt\n*.md\n")
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    (gitdir / "commondir").write_text("../common\n")
    (outside / "common" / "info").mkdir(parents=True)
    (outside / "common" / "info" / "exclude").write_text("visible.txt\n*.md\n")
    (base / f"{MARK_NAME}-sibling.txt").write_text(f"{MARK_CONTENT} sibling\n")
    return outside


def bind_socket(path: pathlib.Path) -> None:
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))


def build_hostile(base: pathlib.Path) -> pathlib.Path:
    """Path spellings, links out and around, special files, unreadable entries."""
    outside = plant_outside(base)
    root = base / "hostile"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "README.md").write_text("# demo\nATTACK-INSIDE-LINE\n")
    (root / "visible.txt").write_text("visible\n")
    (root / "src" / "main.py").write_text("def main():\n    return 'hello'\n")
    (root / "src" / "pkg" / "util.py").write_text("VALUE = 1\n")
    (root / "uni").mkdir()
    (root / "uni" / "caf\u00e9.txt").write_text("nfc\n")
    (root / "uni" / "cafe\u0301.txt").write_text("nfd\n")
    (root / "spaced dir").mkdir()
    (root / "spaced dir" / "a b.txt").write_text("spaced\n")
    (root / "back\\slash.txt").write_text("backslash in a name\n")
    links = {
        "link_file_out": f"../outside/{MARK_NAME}.txt",
        "link_abs_out": str(outside / f"{MARK_NAME}.txt"),
        "link_dir_out": "../outside",
        "link_sibling": f"../{MARK_NAME}-sibling.txt",
        "chain1": "chain2",
        "chain2": "src/chain3",
        "src/chain3": "../link_dir_out/sub",
        "chain_in1": "chain_in2",
        "chain_in2": "README.md",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "self_loop": "self_loop",
        "dangling": "does-not-exist",
        "dangling_out": "/nonexistent-attack/x",
        "link_parent": "..",
        "link_slash": "/",
        "link_etc": "/etc",
        "link_passwd": "/etc/passwd",
        "link_proc_root": "/proc/self/root",
        "link_proc_cwd": "/proc/self/cwd",
        "link_proc_fd": "/proc/self/fd/0",
        "link_environ": "/proc/self/environ",
        "link_devzero": "/dev/zero",
        "link_urandom": "/dev/urandom",
        "link_devnull": "/dev/null",
        "link_stdin": "/dev/stdin",
        "link_tty": "/dev/tty",
        "src/pkg/up": "..",
        "src/pkg/upup": "../../..",
        "link_fifo": "fifo",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.link(outside / "hard-target.txt", root / "hard_out")
    os.mkfifo(root / "fifo")
    os.mkfifo(root / "src" / "fifo.py")
    bind_socket(root / "sock")
    with contextlib.suppress(OSError):  # CAP_MKNOD is not everywhere
        os.mknod(root / "devnode_zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    (root / "locked.txt").write_text("LOCKED-CONTENT\n")
    (root / "locked_dir").mkdir()
    (root / "locked_dir" / "inner.txt").write_text("LOCKED-INNER\n")
    os.chmod(root / "locked.txt", 0)
    os.chmod(root / "locked_dir", 0)
    return root


SPARSE = 2 << 30
LONG_LINE = 70 * 1024 * 1024


def build_huge(base: pathlib.Path) -> pathlib.Path:
    """Huge and odd files: a 2 GiB sparse file, a 70 MB single line, binary, bad UTF-8, ..."""
    plant_outside(base)
    root = base / "huge"
    root.mkdir()
    with open(root / "sparse.bin", "wb") as f:
        f.truncate(SPARSE)
    with open(root / "oneline.txt", "wb") as f:
        chunk = b"y" * (1 << 20)
        for _ in range(LONG_LINE >> 20):
            f.write(chunk)
        f.write(b"NEEDLE-AT-THE-END\n")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 64 + b"\x00NEEDLE\x00")
    (root / "latin1.txt").write_bytes(b"caf\xe9 NEEDLE \xff\xfe\n\xc3\x28 invalid\n")
    (root / "crlf.txt").write_bytes(b"first\r\nNEEDLE second\r\nthird\r\n")
    (root / "cr_only.txt").write_bytes(b"first\rNEEDLE second\rthird\r")
    (root / "no_newline.txt").write_bytes(b"alpha\nNEEDLE omega")
    (root / "empty.txt").write_bytes(b"")
    (root / "nul_only.bin").write_bytes(b"\x00" * 4096)
    (root / "many_lines.txt").write_text("".join(f"line {i}\n" for i in range(200_000)))
    (root / "wide.txt").write_text("w" * (1 << 20) + " NEEDLE\nshort\n")
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfNEEDLE with a BOM\n")
    (root / "utf16.txt").write_bytes("NEEDLE utf16\n".encode("utf-16"))
    (root / "deep").mkdir()
    d = root / "deep"
    for i in range(60):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    (d / "bottom.txt").write_text("NEEDLE at the bottom\n")
    wide = root / "wide_dir"
    wide.mkdir()
    for i in range(3000):
        (wide / f"f{i:04}.txt").write_text(f"{i}\n")
    return root


IGNORE_KINDS: dict[str, Callable[[pathlib.Path, pathlib.Path], None]] = {}


def ignore_kind(name: str) -> Callable[[Callable[[pathlib.Path, pathlib.Path], None]], Any]:
    def register(fn: Callable[[pathlib.Path, pathlib.Path], None]) -> Any:
        IGNORE_KINDS[name] = fn
        return fn

    return register


@ignore_kind("gitignore_symlink_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.symlink(outside / "ignore-rules", root / ".gitignore")


@ignore_kind("gitignore_symlink_marker")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.symlink(outside / f"{MARK_NAME}.txt", root / ".gitignore")


@ignore_kind("gitignore_fifo")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.mkfifo(root / ".gitignore")


@ignore_kind("ignore_devzero")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.symlink("/dev/zero", root / ".ignore")


@ignore_kind("ignore_urandom")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.symlink("/dev/urandom", root / ".ignore")


@ignore_kind("ignore_socket")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    bind_socket(root / ".ignore")


@ignore_kind("gitignore_is_dir")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".gitignore").mkdir()
    (root / ".gitignore" / "visible.txt").write_text("x\n")


@ignore_kind("gitignore_huge")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".gitignore").write_text("visible.txt\n" + "# filler\n" * 300_000)


@ignore_kind("gitignore_hostile_globs")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    lines = ["**/**/**/**/**/**/**/**/**/nothing", "{a,{b,{c,{d,{e,f}}}}}*", "[", "\\", "!"]
    lines += [f"x{i}{{a,b,c}}[0-9]*/**" for i in range(5000)]
    (root / ".gitignore").write_text("\n".join(lines) + "\n")


@ignore_kind("gitignore_unreadable")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".gitignore").write_text("not-there.txt\n")
    os.chmod(root / ".gitignore", 0)


@ignore_kind("nested_gitignore_fifo")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.mkfifo(root / "src" / ".gitignore")


@ignore_kind("nested_ignore_symlink_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.symlink(outside / "ignore-rules", root / "src" / ".ignore")


@ignore_kind("dotgit_file_gitdir_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".git").write_text(f"gitdir: {outside / 'gitdir'}\n")


@ignore_kind("dotgit_file_relative_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".git").write_text("gitdir: ../outside/gitdir\n")


@ignore_kind("dotgit_file_fifo_gitdir")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.mkfifo(root / "gitfifo")
    (root / ".git").write_text("gitdir: gitfifo\n")


@ignore_kind("dotgit_symlink_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.symlink(outside / "gitdir", root / ".git")


@ignore_kind("dotgit_is_fifo")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    os.mkfifo(root / ".git")


@ignore_kind("dotgit_commondir_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "commondir").write_text(f"{outside / 'common'}\n")


@ignore_kind("dotgit_exclude_symlink_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.symlink(outside / "ignore-rules", root / ".git" / "info" / "exclude")


@ignore_kind("dotgit_exclude_fifo")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(root / ".git" / "info" / "exclude")


@ignore_kind("dotgit_exclude_devzero")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.symlink("/dev/zero", root / ".git" / "info" / "exclude")


@ignore_kind("dotgit_info_symlink_out")
def _(root: pathlib.Path, outside: pathlib.Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.symlink(outside / "gitdir" / "info", root / ".git" / "info")


def build_ignore(base: pathlib.Path, kind: str) -> pathlib.Path:
    """A small tree whose ignore files are hostile; ``visible.txt`` must stay visible."""
    outside = plant_outside(base)
    root = base / f"ign-{kind}"
    (root / "src").mkdir(parents=True)
    (root / "visible.txt").write_text("visible NEEDLE\n")
    (root / "README.md").write_text("# readme NEEDLE\n")
    (root / "src" / "app.py").write_text("NEEDLE = 1\n")
    IGNORE_KINDS[kind](root, outside)
    return root


def build(base: pathlib.Path, tree: str) -> pathlib.Path:
    if tree == "hostile":
        return build_hostile(base)
    if tree == "huge":
        return build_huge(base)
    assert tree.startswith("ign-"), tree
    return build_ignore(base, tree.removeprefix("ign-"))


def release(root: pathlib.Path) -> None:
    """Give back permissions taken away, so a non-root user can delete the tree."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = pathlib.Path(dirpath) / name
            if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) == 0:
                os.chmod(p, 0o700)
    for p in root.rglob("*"):
        if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) == 0:
            os.chmod(p, 0o700)


# --- Snapshots --------------------------------------------------------------------------------

_HASHES: dict[tuple[int, ...], str] = {}


def content_hash(path: pathlib.Path, st: os.stat_result) -> str:
    """sha256 of a regular file's data extents (holes read as zeros, so the extents and the size
    fix every byte). Cached by inode, size, mtime and ctime: no write leaves ctime unchanged."""
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key in _HASHES:
        return _HASHES[key]
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except PermissionError:
        return "unreadable"
    try:
        pos = 0
        while pos < st.st_size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
                end = os.lseek(fd, start, os.SEEK_HOLE)
            except OSError:  # no more data, or no SEEK_DATA here
                break
            h.update(f"@{start}".encode())
            os.lseek(fd, start, os.SEEK_SET)
            left = end - start
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 22))
                if not chunk:
                    break
                h.update(chunk)
                left -= len(chunk)
            pos = end
    finally:
        os.close(fd)
    _HASHES[key] = h.hexdigest()
    return _HASHES[key]


def snapshot(root: pathlib.Path) -> dict[str, str]:
    """Every entry under root (root included): kind, mode, owner, size, mtime, and the bytes of
    files or the target of symlinks. A directory's mtime changes when anything is created in it."""
    out: dict[str, str] = {}
    stack = [root]
    while stack:
        d = stack.pop()
        st = d.lstat()
        out[str(d.relative_to(root))] = f"dir {st.st_mode:o} {st.st_uid} {st.st_mtime_ns}"
        try:
            names = sorted(os.listdir(d))
        except PermissionError:
            continue
        for name in names:
            p = d / name
            st = p.lstat()
            rel = str(p.relative_to(root))
            meta = f"{st.st_mode:o} {st.st_uid}:{st.st_gid} {st.st_size} {st.st_mtime_ns}"
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"link {os.readlink(p)}"
            elif stat.S_ISDIR(st.st_mode):
                stack.append(p)
            elif stat.S_ISREG(st.st_mode):
                out[rel] = f"file {meta} {content_hash(p, st)}"
            else:
                out[rel] = f"special {meta}"
    return out


@dataclass
class Trees:
    """Builds each tree once under ``base`` and remembers its snapshot."""

    base: pathlib.Path
    roots: dict[str, pathlib.Path] = field(default_factory=dict)
    before: dict[str, dict[str, str]] = field(default_factory=dict)

    def get(self, tree: str) -> pathlib.Path:
        if tree not in self.roots:
            self.roots[tree] = build(self.base, tree)
            self.before[tree] = snapshot(self.roots[tree])
        return self.roots[tree]

    def changed(self, tree: str) -> list[str]:
        now = snapshot(self.roots[tree])
        old = self.before[tree]
        return sorted(k for k in old.keys() | now.keys() if old.get(k) != now.get(k))

    def close(self) -> None:
        for root in self.roots.values():
            release(root)


# --- Cases ------------------------------------------------------------------------------------

Check = Callable[[dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class Case:
    """One hostile call. ``args`` strings may hold ``{root}`` / ``{base}`` (filled in at run
    time); ``expect`` is the set of acceptable outcomes (an error code, or :data:`OK`)."""

    id: str
    tree: str
    tool: str
    args: Any
    expect: frozenset[str]
    timeout: float = 3.0
    check: Check | None = None
    evidence: tuple[str, ...] | None = None
    # The child itself must fail (with a clear error): the model sent what no tool call can be.
    child_fails: bool = False


def codes(*names: str) -> frozenset[str]:
    return frozenset(names)


DENIED = codes("ACCESS_DENIED")
NOT_FOUND = codes("NOT_FOUND")
INVALID = codes("INVALID_PARAM")
SUCCESS = codes(OK)
# A whole-tree search of the huge tree may run out of its time limit in a debug build (what CI
# tests): a clear TIMEOUT within the limit is as good as an answer; the bound is what is tested.
SLOW = codes(OK, "TIMEOUT")


def listed(*names: str) -> Check:
    """The envelope lists (Glob) or matches in (Grep) each of ``names``."""

    def check(env: dict[str, Any]) -> str | None:
        data = env.get("data", {})
        seen = set(data.get("paths", [])) | {m.get("file") for m in data.get("matches", [])}
        seen |= set(data.get("files", []))
        missing = [n for n in names if n not in seen]
        return f"not listed: {missing} (saw {sorted(map(str, seen))[:10]})" if missing else None

    return check


def refused_ignore(env: dict[str, Any]) -> str | None:
    if env["data"].get("refused_ignore_files", 0) < 1:
        return f"no refused_ignore_files reported: {env['data']}"
    return None


def both(*checks: Check) -> Check:
    def check(env: dict[str, Any]) -> str | None:
        for c in checks:
            problem = c(env)
            if problem:
                return problem
        return None

    return check


def content_has(text: str) -> Check:
    def check(env: dict[str, Any]) -> str | None:
        got = str(env.get("data", {}).get("content", ""))
        return None if text in got else f"content lacks {text!r}: {got[:200]!r}"

    return check


def text_has(*parts: str) -> Check:
    """The envelope's text says each of ``parts``."""

    def check(env: dict[str, Any]) -> str | None:
        missing = [p for p in parts if p not in str(env.get("text", ""))]
        return f"text lacks {missing}: {str(env.get('text'))[:300]!r}" if missing else None

    return check


def data_has(key: str) -> Check:
    def check(env: dict[str, Any]) -> str | None:
        return None if env.get("data", {}).get(key) else f"data.{key} missing: {env['data']}"

    return check


def root_reads_anyway(text: str) -> Check:
    """chmod 000 does not stop root (CI runs as root): then the content is read; otherwise the
    call must be refused, which ``expect`` covers."""

    def check(env: dict[str, Any]) -> str | None:
        if os.geteuid() == 0:
            return content_has(text)(env)
        return None if env["status"] == "error" else f"unreadable file was read: {env}"

    return check


def read_cases() -> list[Case]:
    out = f"../outside/{MARK_NAME}.txt"
    spellings: list[tuple[str, str, frozenset[str]]] = [
        ("dotdot", "../outside/ignore-rules", DENIED),
        ("dotdot-marker", out, DENIED),
        ("dotdot-sibling", f"../{MARK_NAME}-sibling.txt", DENIED),
        ("dotdot-deep", "../" * 300 + "etc/passwd", DENIED),
        ("dotdot-inner", "src/../../outside/ignore-rules", DENIED),
        ("dotdot-dot", "./../outside/ignore-rules", DENIED),
        ("dotdot-back-in", "src/../README.md", SUCCESS),
        ("dotdot-out-and-in", "../hostile/README.md", codes(OK, "ACCESS_DENIED")),
        ("abs-etc", "/etc/passwd", DENIED),
        ("abs-shadow", "/etc/shadow", DENIED),
        ("abs-outside", "{base}/outside/ignore-rules", DENIED),
        ("abs-inside", "{root}/README.md", codes(OK, "ACCESS_DENIED")),
        ("abs-root-dotdot", "{root}/../outside/ignore-rules", DENIED),
        ("double-slash-abs", "//etc/passwd", DENIED),
        ("proc-root", "/proc/self/root/etc/passwd", DENIED),
        ("proc-cwd", "/proc/self/cwd/README.md", DENIED),
        ("dev-stdin", "/dev/stdin", DENIED),
        ("dev-zero", "/dev/zero", DENIED),
        ("tilde-home", "~/.bashrc", NOT_FOUND),
        ("tilde-root", "~root/.profile", NOT_FOUND),
        ("tilde-alone", "~", NOT_FOUND),
        ("env-var", "$HOME/.bashrc", NOT_FOUND),
        ("file-url", "file:///etc/passwd", NOT_FOUND),
        ("nul-middle", "README.md\x00../../etc/passwd", INVALID),
        ("nul-end", "README.md\x00", INVALID),
        ("nul-only", "\x00", INVALID),
        ("empty", "", INVALID),
        ("long-name", "x" * 5000, INVALID),
        ("long-components", "a/" * 3000 + "b", codes("INVALID_PARAM", "NOT_FOUND")),
        ("long-255", "n" * 256, codes("INVALID_PARAM", "NOT_FOUND")),
        ("trailing-slash-file", "README.md/", codes(OK, "NOT_FOUND", "INVALID_PARAM")),
        ("trailing-dot-file", "src/main.py/.", codes(OK, "NOT_FOUND", "INVALID_PARAM")),
        ("file-then-dotdot", "src/main.py/../main.py", codes(OK, "NOT_FOUND", "INVALID_PARAM")),
        ("double-slash", "src//main.py", SUCCESS),
        ("dot-slash", "./README.md", SUCCESS),
        ("dot", ".", codes("IS_DIRECTORY")),
        ("three-dots", "...", NOT_FOUND),
        ("backslash-dotdot", "..\\outside\\ignore-rules", NOT_FOUND),
        ("backslash-name", "back\\slash.txt", SUCCESS),
        ("backslash-sep", "src\\main.py", NOT_FOUND),
        ("percent-dotdot", "%2e%2e/outside/ignore-rules", NOT_FOUND),
        ("fullwidth-dots", "\uff0e\uff0e/outside/ignore-rules", NOT_FOUND),
        ("two-dot-leader", "\u2025/outside/ignore-rules", NOT_FOUND),
        ("unicode-nfc", "uni/caf\u00e9.txt", SUCCESS),
        ("unicode-nfd", "uni/cafe\u0301.txt", SUCCESS),
        ("zero-width", "README.md\u200b", NOT_FOUND),
        ("rtl-override", "\u202eREADME.md", NOT_FOUND),
        ("case-folded", "readme.MD", NOT_FOUND),
        ("trailing-space", "README.md ", NOT_FOUND),
        ("newline", "README.md\n", NOT_FOUND),
        ("spaced", "spaced dir/a b.txt", SUCCESS),
        ("dir", "src", codes("IS_DIRECTORY")),
    ]
    links: list[tuple[str, str, frozenset[str], Check | None]] = [
        ("link-file-out", "link_file_out", DENIED, None),
        ("link-abs-out", "link_abs_out", DENIED, None),
        ("link-dir-out", f"link_dir_out/{MARK_NAME}.txt", DENIED, None),
        ("link-dir-out-deep", f"link_dir_out/sub/{MARK_NAME}-deep.txt", DENIED, None),
        ("link-sibling", "link_sibling", DENIED, None),
        ("chain-out", f"chain1/{MARK_NAME}-deep.txt", DENIED, None),
        ("chain-in", "chain_in1", SUCCESS, content_has("ATTACK-INSIDE-LINE")),
        ("loop", "loop_a", codes("INTERNAL_ERROR", "INVALID_PARAM", "NOT_FOUND"), None),
        ("loop-under", "loop_b/x", codes("INTERNAL_ERROR", "INVALID_PARAM", "NOT_FOUND"), None),
        ("self-loop", "self_loop", codes("INTERNAL_ERROR", "INVALID_PARAM", "NOT_FOUND"), None),
        ("dangling", "dangling", NOT_FOUND, None),
        ("dangling-out", "dangling_out", codes("ACCESS_DENIED", "NOT_FOUND"), None),
        ("link-parent", "link_parent/outside/ignore-rules", DENIED, None),
        ("link-parent-back", "link_parent/hostile/README.md", codes(OK, "ACCESS_DENIED"), None),
        ("link-slash", "link_slash/etc/passwd", DENIED, None),
        ("link-etc", "link_etc/passwd", DENIED, None),
        ("link-passwd", "link_passwd", DENIED, None),
        ("link-proc-root", "link_proc_root/etc/passwd", DENIED, None),
        ("link-proc-cwd", "link_proc_cwd/README.md", DENIED, None),
        ("link-proc-fd", "link_proc_fd", DENIED, None),
        ("link-environ", "link_environ", DENIED, None),
        ("link-devzero", "link_devzero", DENIED, None),
        ("link-urandom", "link_urandom", DENIED, None),
        ("link-devnull", "link_devnull", DENIED, None),
        ("link-stdin", "link_stdin", DENIED, None),
        ("link-tty", "link_tty", DENIED, None),
        ("cycle-in", "src/pkg/up/main.py", SUCCESS, None),
        ("cycle-out", "src/pkg/upup/outside/ignore-rules", DENIED, None),
        ("hardlink", "hard_out", SUCCESS, content_has(HARDLINKED)),
        ("fifo", "fifo", INVALID, None),
        ("fifo-py", "src/fifo.py", INVALID, None),
        ("link-fifo", "link_fifo", INVALID, None),
        ("socket", "sock", codes("INVALID_PARAM", "NOT_FOUND"), None),
        ("char-device", "devnode_zero", codes("INVALID_PARAM", "NOT_FOUND"), None),
        ("chmod-000-file", "locked.txt", ANY, root_reads_anyway("LOCKED-CONTENT")),
        ("chmod-000-dir", "locked_dir/inner.txt", ANY, root_reads_anyway("LOCKED-INNER")),
    ]
    cases = [Case(f"read-path-{n}", "hostile", "Read", {"path": p}, e) for n, p, e in spellings]
    cases += [
        Case(f"read-link-{n}", "hostile", "Read", {"path": p}, e, check=c) for n, p, e, c in links
    ]
    return cases


def grep_glob_path_cases() -> list[Case]:
    """Search roots that lead out (or nowhere) for both walkers."""
    paths: list[tuple[str, str, frozenset[str]]] = [
        ("dotdot", "..", DENIED),
        ("dotdot-slash", "../", DENIED),
        ("slash", "/", DENIED),
        ("etc", "/etc", DENIED),
        ("proc", "/proc/self", DENIED),
        ("outside-abs", "{base}/outside", DENIED),
        ("link-dir-out", "link_dir_out", DENIED),
        ("link-parent", "link_parent", DENIED),
        ("link-slash", "link_slash", DENIED),
        ("link-proc-root", "link_proc_root", DENIED),
        ("chain", "chain1", DENIED),
        ("cycle-out", "src/pkg/upup", DENIED),
        ("loop", "loop_a", codes("INTERNAL_ERROR", "INVALID_PARAM", "NOT_FOUND")),
        ("fifo", "fifo", codes(OK, "INVALID_PARAM", "NOT_FOUND")),
        ("dangling", "dangling", NOT_FOUND),
        ("nul", "src\x00/../..", INVALID),
        ("tilde", "~", NOT_FOUND),
        ("trailing-slashes", "src///", SUCCESS),
        ("chmod-000-dir", "locked_dir", ANY),
    ]
    cases = []
    for n, p, e in paths:
        cases.append(Case(f"grep-path-{n}", "hostile", "Grep", {"pattern": ".", "path": p}, e))
        cases.append(Case(f"glob-path-{n}", "hostile", "Glob", {"pattern": "**/*", "path": p}, e))
    return cases


# Arguments larger than a child's whole context budget: the model's own call cannot be sent
# back to it, so the child ends with a context_budget error (run_tool refuses them by size).
TOO_BIG = {"huge-literal", "huge-alternation", "huge"}


def grep_cases() -> list[Case]:
    mark = "ATTACK-OUTSIDE-CONTEN[T]"
    every = {"include_hidden": True, "include_ignored": True}
    searches: list[tuple[str, dict[str, Any], frozenset[str], Check | None]] = [
        ("mark", {"pattern": mark}, SUCCESS, None),
        ("mark-all", {"pattern": mark, **every}, SUCCESS, None),
        (
            "mark-files",
            {"pattern": mark, "output_mode": "files_with_matches", **every},
            SUCCESS,
            None,
        ),
        ("mark-count", {"pattern": mark, "output_mode": "count", **every}, SUCCESS, None),
        ("passwd", {"pattern": "root:x:0", **every}, SUCCESS, None),
        ("glob-dotdot", {"pattern": mark, "glob": "../**"}, codes(OK, "INVALID_PARAM"), None),
        ("glob-abs", {"pattern": mark, "glob": "/**/*"}, codes(OK, "INVALID_PARAM"), None),
        ("glob-link-dir", {"pattern": mark, "glob": "link_dir_out/**", **every}, SUCCESS, None),
        ("glob-name", {"pattern": ".", "glob": f"**/{MARK_NAME}*", **every}, SUCCESS, None),
        ("hardlink", {"pattern": "HARDLINKED-INSIDE", **every}, SUCCESS, listed("hard_out")),
        ("inside", {"pattern": "ATTACK-INSIDE-LINE", **every}, SUCCESS, listed("README.md")),
        ("context", {"pattern": "VALUE", "context": 20, **every}, SUCCESS, None),
        ("type-py", {"pattern": ".", "type": "py", **every}, SUCCESS, None),
        ("locked", {"pattern": "LOCKED-", **every}, SUCCESS, None),
    ]
    patterns: list[tuple[str, Any, frozenset[str]]] = [
        ("catastrophic-nested", "(a+)+$", SUCCESS),
        ("catastrophic-alt", "(a|aa)+b", SUCCESS),
        ("catastrophic-star", "(.*a){25}", SUCCESS),
        ("repeat-repeat", "a{1000}{1000}", INVALID),
        ("repeat-huge", "a{100000}", codes(OK, "INVALID_PARAM")),
        ("repeat-nested-groups", "((a{100}){100}){100}", INVALID),
        ("unicode-word-repeat", "\\w{1000}", codes(OK, "INVALID_PARAM")),
        ("huge-literal", "x" * 100_000, INVALID),
        (
            "huge-alternation",
            "|".join(f"word{i}" for i in range(20_000)),
            codes(OK, "INVALID_PARAM"),
        ),
        ("lookbehind", "(?<=def )main", SUCCESS),
        ("lookahead", "main(?=\\()", SUCCESS),
        ("negative-lookahead", "^(?!def).*", SUCCESS),
        ("backreference", "(\\w)\\1", SUCCESS),
        ("lookaround-catastrophic", "(?=(a+)+$)b", codes(OK, "INVALID_PARAM")),
        ("backref-catastrophic", "^(\\w+)+\\1$", codes(OK, "INVALID_PARAM")),
        ("invalid-bracket", "[", INVALID),
        ("invalid-paren", "(", INVALID),
        ("invalid-group-name", "(?P<", INVALID),
        ("invalid-escape", "\\", INVALID),
        ("invalid-range", "a{2,1}", INVALID),
        ("invalid-star", "*", INVALID),
        ("invalid-class", "\\p{NotAClass}", INVALID),
        ("nul-byte", "\x00", codes(OK, "INVALID_PARAM")),
        ("match-all", "(?s).*", SUCCESS),
        ("empty-match", "^", SUCCESS),
        ("multiline-flag", "(?m)^def", SUCCESS),
        ("not-a-string", 12, INVALID),
        ("empty", "", INVALID),
    ]
    cases = [Case(f"grep-{n}", "hostile", "Grep", a, e, check=c) for n, a, e, c in searches]
    cases += [
        Case(f"grep-re-{n}", "hostile", "Grep", {"pattern": p}, e, child_fails=n in TOO_BIG)
        for n, p, e in patterns
    ]
    return cases


def glob_cases() -> list[Case]:
    braces = "{" + ",".join(f"n{i}" for i in range(3000)) + "}"
    nested = "{a," * 12 + "b" + "}" * 12
    globs: list[tuple[str, Any, frozenset[str]]] = [
        ("all", "**/*", SUCCESS),
        ("dotdot", "../*", codes(OK, "INVALID_PARAM")),
        ("dotdot-deep", "../**/*", codes(OK, "INVALID_PARAM")),
        ("abs", "/etc/*", codes(OK, "INVALID_PARAM")),
        ("inner-dotdot", "**/../../*", codes(OK, "INVALID_PARAM")),
        ("brace-dotdot", "{..,.}/*", codes(OK, "INVALID_PARAM")),
        ("link-dir", "link_dir_out/**", SUCCESS),
        ("name-mark", f"**/{MARK_NAME}*", SUCCESS),
        ("braces", "**/*.{py,md,txt}", SUCCESS),
        ("braces-huge", braces, codes(OK, "INVALID_PARAM")),
        ("braces-nested", nested, codes(OK, "INVALID_PARAM")),
        ("globstar-many", "/".join(["**"] * 40) + "/*.py", codes(OK, "INVALID_PARAM")),
        ("stars-many", "*" * 5000, codes(OK, "INVALID_PARAM")),
        ("class-open", "[", codes(OK, "INVALID_PARAM")),
        ("class-negated", "[!a]*", SUCCESS),
        ("backslash", "\\", codes(OK, "INVALID_PARAM")),
        ("huge", "a" * 100_000, INVALID),
        ("nul", "*\x00", codes(OK, "INVALID_PARAM")),
        ("unicode", "uni/caf*", SUCCESS),
        ("triple-star", "***", codes(OK, "INVALID_PARAM")),
        ("empty", "", INVALID),
        ("not-a-string", ["*"], INVALID),
    ]
    cases = [
        Case(f"glob-{n}", "hostile", "Glob", {"pattern": g}, e, child_fails=n in TOO_BIG)
        for n, g, e in globs
    ]
    every = {"include_hidden": True, "include_ignored": True}
    cases.append(Case("glob-everything", "hostile", "Glob", {"pattern": "**", **every}, SUCCESS))
    return cases


def argument_cases() -> list[Case]:
    wrong: list[tuple[str, str, Any]] = [
        ("read-path-int", "Read", {"path": 123}),
        ("read-path-list", "Read", {"path": ["README.md"]}),
        ("read-path-null", "Read", {"path": None}),
        ("read-path-dict", "Read", {"path": {"p": 1}}),
        ("read-path-bool", "Read", {"path": True}),
        ("read-no-path", "Read", {}),
        ("read-start-huge", "Read", {"path": "README.md", "start_line": 10**30}),
        ("read-start-zero", "Read", {"path": "README.md", "start_line": 0}),
        ("read-start-negative", "Read", {"path": "README.md", "start_line": -5}),
        ("read-start-float", "Read", {"path": "README.md", "start_line": 1.5}),
        ("read-start-nan", "Read", {"path": "README.md", "start_line": float("nan")}),
        ("read-limit-string", "Read", {"path": "README.md", "limit": "10"}),
        ("read-limit-over", "Read", {"path": "README.md", "limit": 2001}),
        ("read-limit-inf", "Read", {"path": "README.md", "limit": float("inf")}),
        ("read-limit-2e64", "Read", {"path": "README.md", "limit": 2**64}),
        ("read-extra-key", "Read", {"path": "README.md", "command": "rm -rf /"}),
        ("read-args-list", "Read", [1, 2]),
        ("read-args-int", "Read", 42),
        ("read-args-bad-json", "Read", '{"path": '),
        ("read-args-deep-json", "Read", "[" * 100_000 + "]" * 100_000),
        ("read-args-deep-dict", "Read", {"path": nested(150)}),
        ("read-args-bytes", "Read", {"path": b"README.md"}),
        ("read-args-set", "Read", {"path": {"README.md"}}),
        ("read-args-surrogate", "Read", {"path": "README\udc80.md"}),
        ("read-args-nonstr-key", "Read", {1: "README.md"}),
        ("grep-limit-zero", "Grep", {"pattern": "a", "limit": 0}),
        ("grep-limit-bool", "Grep", {"pattern": "a", "limit": True}),
        ("grep-context-negative", "Grep", {"pattern": "a", "context": -1}),
        ("grep-context-huge", "Grep", {"pattern": "a", "context": 10**9}),
        ("grep-after-float", "Grep", {"pattern": "a", "after": 2.5}),
        ("grep-mode-unknown", "Grep", {"pattern": "a", "output_mode": "everything"}),
        ("grep-type-int", "Grep", {"pattern": "a", "type": 5}),
        ("grep-type-unknown", "Grep", {"pattern": "a", "type": "no-such-type"}),
        ("grep-case-string", "Grep", {"pattern": "a", "case_sensitive": "yes"}),
        ("grep-glob-list", "Grep", {"pattern": "a", "glob": ["*.py"]}),
        ("grep-hidden-int", "Grep", {"pattern": "a", "include_hidden": 1}),
        ("grep-path-int", "Grep", {"pattern": "a", "path": 7}),
        ("glob-limit-over", "Glob", {"pattern": "*", "limit": 201}),
        ("glob-limit-string", "Glob", {"pattern": "*", "limit": "3"}),
        ("glob-ignored-string", "Glob", {"pattern": "*", "include_ignored": "no"}),
        ("glob-path-list", "Glob", {"pattern": "*", "path": ["src"]}),
    ]
    # What a model cannot send as arguments (not a JSON object, or no JSON at all, or too big
    # for the context): the child fails naming it; run_tool gives an error envelope. (A non-str
    # key reaches the tool as a str, as Python's json writes it, and the tool refuses it.)
    unsendable = {"list", "int", "deep-json", "deep-dict", "bytes", "surrogate"}
    return [
        Case(
            f"args-{n}",
            "hostile",
            t,
            a,
            INVALID,
            child_fails=n.removeprefix("read-args-") in unsendable,
        )
        for n, t, a in wrong
    ]


def nested(depth: int) -> Any:
    value: Any = "README.md"
    for _ in range(depth):
        value = {"x": [value]}
    return value


def huge_cases() -> list[Case]:
    def partial(env: dict[str, Any]) -> str | None:
        # A file searched only up to a long line is an incomplete answer, never a plain success.
        return None if env["status"] == "partial" else f"status {env['status']!r}, not partial"

    long_check = both(data_has("skipped_long_lines"), data_has("long_line_files"), partial)
    cases: list[Case] = [
        Case("huge-read-sparse", "huge", "Read", {"path": "sparse.bin"}, codes(OK, "BINARY_FILE")),
        Case(
            "huge-read-sparse-far",
            "huge",
            "Read",
            {"path": "sparse.bin", "start_line": 10**6},
            codes(OK, "BINARY_FILE", "INVALID_PARAM"),
        ),
        # Shown cut, and the line named with its length (never an empty preview).
        Case(
            "huge-read-oneline",
            "huge",
            "Read",
            {"path": "oneline.txt"},
            SUCCESS,
            timeout=20,
            check=both(
                content_has("   1 | yyyy"),
                text_has(f"line 1 is {LONG_LINE + len('NEEDLE-AT-THE-END')} bytes long"),
                partial,
            ),
        ),
        Case(
            "huge-read-oneline-line2",
            "huge",
            "Read",
            {"path": "oneline.txt", "start_line": 2},
            codes(OK, "INVALID_PARAM"),
        ),
        Case(
            "huge-read-binary",
            "huge",
            "Read",
            {"path": "binary.bin"},
            codes(OK, "BINARY_FILE", "INVALID_PARAM"),
        ),
        Case(
            "huge-read-nul-only",
            "huge",
            "Read",
            {"path": "nul_only.bin"},
            codes(OK, "BINARY_FILE", "INVALID_PARAM"),
        ),
        Case(
            "huge-read-latin1",
            "huge",
            "Read",
            {"path": "latin1.txt"},
            SUCCESS,
            check=content_has("NEEDLE"),
        ),
        Case(
            "huge-read-crlf",
            "huge",
            "Read",
            {"path": "crlf.txt"},
            SUCCESS,
            check=content_has("NEEDLE second"),
        ),
        Case(
            "huge-read-cr-only",
            "huge",
            "Read",
            {"path": "cr_only.txt"},
            SUCCESS,
            check=content_has("NEEDLE"),
        ),
        Case(
            "huge-read-no-newline",
            "huge",
            "Read",
            {"path": "no_newline.txt"},
            SUCCESS,
            check=content_has("NEEDLE omega"),
        ),
        Case("huge-read-empty", "huge", "Read", {"path": "empty.txt"}, SUCCESS),
        Case(
            "huge-read-empty-past-end",
            "huge",
            "Read",
            {"path": "empty.txt", "start_line": 5},
            codes(OK, "INVALID_PARAM"),
        ),
        Case(
            "huge-read-many-lines-end",
            "huge",
            "Read",
            {"path": "many_lines.txt", "start_line": 199_990, "limit": 2000},
            SUCCESS,
            check=content_has("line 199999"),
        ),
        Case("huge-read-wide", "huge", "Read", {"path": "wide.txt"}, SUCCESS),
        Case(
            "huge-read-bom",
            "huge",
            "Read",
            {"path": "bom.txt"},
            SUCCESS,
            check=content_has("NEEDLE"),
        ),
        Case(
            "huge-read-utf16",
            "huge",
            "Read",
            {"path": "utf16.txt"},
            codes(OK, "BINARY_FILE", "INVALID_PARAM"),
        ),
        Case(
            "huge-read-deep",
            "huge",
            "Read",
            {"path": "/".join(["deep"] + [f"d{i}" for i in range(60)] + ["bottom.txt"])},
            SUCCESS,
        ),
        Case(
            "huge-grep-needle",
            "huge",
            "Grep",
            {"pattern": "NEEDLE", "limit": 200},
            SUCCESS,
            timeout=20,
            check=long_check,
        ),
        Case(
            "huge-grep-end-of-long-line",
            "huge",
            "Grep",
            {"pattern": "NEEDLE-AT-THE-END"},
            SUCCESS,
            timeout=20,
            check=both(long_check, text_has("'oneline.txt' line 1", "were not searched")),
        ),
        Case(
            "huge-grep-files",
            "huge",
            "Grep",
            {"pattern": "NEEDLE", "output_mode": "files_with_matches"},
            SLOW,
        ),
        Case("huge-grep-count", "huge", "Grep", {"pattern": "y", "output_mode": "count"}, SLOW),
        Case("huge-grep-nul", "huge", "Grep", {"pattern": "\\x00"}, SLOW | INVALID),
        Case("huge-grep-dotstar", "huge", "Grep", {"pattern": ".*", "limit": 200}, SLOW),
        Case("huge-grep-catastrophic", "huge", "Grep", {"pattern": "(y+)+$"}, SLOW),
        Case("huge-grep-lookaround", "huge", "Grep", {"pattern": "(?<=y)NEEDLE"}, SLOW | INVALID),
        Case(
            "huge-grep-backref-wide", "huge", "Grep", {"pattern": "(w+)\\1 NEEDLE"}, SLOW | INVALID
        ),
        Case(
            "huge-grep-short-timeout",
            "huge",
            "Grep",
            {"pattern": "zzz-not-there"},
            codes(OK, "TIMEOUT"),
            timeout=0.3,
        ),
        Case(
            "huge-grep-sparse-only", "huge", "Grep", {"pattern": "x", "glob": "sparse.bin"}, SUCCESS
        ),
        Case("huge-glob-all", "huge", "Glob", {"pattern": "**/*"}, SUCCESS),
        Case(
            "huge-glob-deep",
            "huge",
            "Glob",
            {"pattern": "**/bottom.txt"},
            SUCCESS,
            check=listed("/".join(["deep"] + [f"d{i}" for i in range(60)] + ["bottom.txt"])),
        ),
        Case(
            "huge-glob-short-timeout",
            "huge",
            "Glob",
            {"pattern": "**/*.nothing"},
            codes(OK, "TIMEOUT"),
            timeout=0.2,
        ),
        # The completion gate: 40 citations of the sparse file, 40 of the long line.
        Case(
            "huge-evidence-sparse",
            "huge",
            "Glob",
            {"pattern": "*.bin"},
            SUCCESS,
            evidence=tuple(f"sparse.bin:{2 + i}" for i in range(40)),
        ),
        Case(
            "huge-evidence-long-line",
            "huge",
            "Glob",
            {"pattern": "*.txt"},
            SUCCESS,
            evidence=tuple(f"oneline.txt:{1 + i}" for i in range(40)),
        ),
    ]
    return cases


def ignore_cases() -> list[Case]:
    refused = {
        "gitignore_symlink_out", "gitignore_symlink_marker", "gitignore_fifo", "ignore_devzero",
        "ignore_urandom", "ignore_socket", "gitignore_huge", "nested_gitignore_fifo",
        "nested_ignore_symlink_out", "dotgit_exclude_symlink_out", "dotgit_exclude_fifo",
        "dotgit_exclude_devzero",
    }  # fmt: skip
    cases = []
    for kind in IGNORE_KINDS:
        check = listed("visible.txt", "README.md")
        if kind in refused:
            check = both(check, refused_ignore)
        tree = f"ign-{kind}"
        cases.append(
            Case(f"ignore-{kind}-glob", tree, "Glob", {"pattern": "**/*"}, SUCCESS, check=check)
        )
        cases.append(
            Case(f"ignore-{kind}-grep", tree, "Grep", {"pattern": "NEEDLE"}, SUCCESS, check=check)
        )
    return cases


def search_cases() -> list[Case]:
    """Search (the code index) over the hostile and huge trees: the index is built by the same
    confined walk and opens, so nothing outside may show, nothing may hang, and nothing may be
    written inside the root (its cache lives outside). Run through ``run_tool`` only: the
    explore child's tools stay Read, Grep and Glob."""
    dirs = codes("ACCESS_DENIED", "NOT_FOUND", "INVALID_PARAM")
    return [
        Case(
            "search-hostile-everything",
            "hostile",
            "Search",
            {"query": f"{MARK_CONTENT} {MARK_NAME} root password secret visible", "limit": 30},
            SUCCESS,
        ),
        Case(
            "search-hostile-path-out",
            "hostile",
            "Search",
            {"query": "x", "path": "../outside"},
            dirs,
        ),
        Case(
            "search-hostile-path-abs", "hostile", "Search", {"query": "x", "path": "{base}"}, dirs
        ),
        Case(
            "search-hostile-path-link",
            "hostile",
            "Search",
            {"query": "x", "path": "link_dir_out"},
            dirs,
        ),
        Case("search-huge", "huge", "Search", {"query": "bottom deep sparse line"}, SUCCESS),
        Case(
            "search-huge-short-timeout",
            "huge",
            "Search",
            {"query": "bottom"},
            codes(OK, "TIMEOUT"),
            timeout=0.2,
        ),
        # 100,000 distinct words (600 KB): read up to a bound, in time, saying what was left out.
        Case(
            "search-query-100k-words",
            "hostile",
            "Search",
            {"query": " ".join(f"w{i}x" for i in range(100_000))},
            SUCCESS,
            check=both(
                text_has("The query is too long", "up to the word", "left out"),
                data_has("query_terms"),
                data_has("query_words_left_out"),
            ),
        ),
        Case(
            "search-query-quoted-flood",
            "hostile",
            "Search",
            {"query": " ".join(f'"q{i}" the' for i in range(60_000))},
            SUCCESS,
            check=text_has("The query is too long"),
        ),
        Case("search-args-query-int", "hostile", "Search", {"query": 7}, INVALID),
        Case("search-args-limit-over", "hostile", "Search", {"query": "a", "limit": 31}, INVALID),
        Case("search-args-unknown", "hostile", "Search", {"query": "a", "pattern": "b"}, INVALID),
        Case(
            "search-args-path-list", "hostile", "Search", {"query": "a", "path": ["src"]}, INVALID
        ),
        Case("search-args-none", "hostile", "Search", {}, INVALID),
    ]


SEARCH_CASES: list[Case] = search_cases()

CASES: list[Case] = (
    read_cases()
    + grep_glob_path_cases()
    + grep_cases()
    + glob_cases()
    + argument_cases()
    + huge_cases()
    + ignore_cases()
)


# --- Running ----------------------------------------------------------------------------------


def fill(value: Any, root: pathlib.Path) -> Any:
    """Fill ``{root}`` / ``{base}`` placeholders in strings, recursively."""
    if isinstance(value, str):
        return value.replace("{root}", str(root)).replace("{base}", str(root.parent))
    if isinstance(value, dict):  # placeholders are only ever top-level argument values
        return {k: fill(v, root) if isinstance(v, str) else v for k, v in value.items()}
    return value


def arg_strings(value: Any) -> list[str]:
    """Every string in the arguments (an error message may echo them; they are not leaks)."""
    out: list[str] = []
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out += arg_strings(k) + arg_strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            out += arg_strings(v)
    return [s for s in out if len(s) >= 3]


def leaks(text: str, echoes: list[str]) -> list[str]:
    """The markers in ``text`` once the caller's own strings (raw or JSON-escaped) are removed."""
    for s in sorted(echoes, key=len, reverse=True):
        text = text.replace(s, "")
        with contextlib.suppress(UnicodeError, ValueError):
            text = text.replace(json.dumps(s)[1:-1], "")
    return [m for m in MARKERS if m in text]


@dataclass
class Outcome:
    """One run of one case, and what was wrong with it."""

    case: str
    mode: str  # "tool" | "child"
    elapsed: float
    limit: float
    problems: list[str] = field(default_factory=list)
    escaped: bool = False
    crashed: bool = False

    @property
    def hung(self) -> bool:
        return self.elapsed > self.limit + SLACK

    @property
    def over(self) -> float:
        """Seconds past the limit (negative: within it)."""
        return self.elapsed - self.limit


def outcome_of(envelope: dict[str, Any]) -> str:
    if envelope.get("status") == "error":
        return str(envelope.get("error", {}).get("code"))
    return OK


def run_tool_case(case: Case, trees: Trees) -> Outcome:
    root = trees.get(case.tree)
    args = fill(case.args, root)
    started = time.perf_counter()
    try:
        env: Any = outrider.run_tool(root, case.tool, args, timeout=case.timeout)
    except Exception as exc:  # any exception is a crash: bad arguments must be envelopes
        out = Outcome(case.id, "tool", time.perf_counter() - started, case.timeout)
        out.crashed = True
        out.problems.append(f"raised {type(exc).__name__}: {exc}"[:500])
        return out
    out = Outcome(case.id, "tool", time.perf_counter() - started, case.timeout)
    envelope = dict(env)
    found = leaks(json.dumps(envelope), arg_strings(args))
    if found:
        out.escaped = True
        out.problems.append(f"outside data in the envelope: {found}")
    got = outcome_of(envelope)
    if case.expect != ANY and got not in case.expect:
        error = envelope.get("error") or {}
        out.problems.append(
            f"outcome {got} not in {sorted(case.expect)}: {error.get('message')!r}"[:500]
        )
    if envelope.get("status") == "error" and not (envelope.get("error") or {}).get("message"):
        out.problems.append("an error envelope without a message")
    if case.check is not None and got == OK:
        problem = case.check(envelope)
        if problem:
            out.problems.append(problem[:500])
    if out.hung:
        out.problems.append(f"took {out.elapsed:.2f} s under a {case.timeout} s limit")
    changed = trees.changed(case.tree)
    if changed:
        out.problems.append(f"the tree changed: {changed[:5]}")
    return out


CHILD_TIMEOUT = 3.0


def child_evidence(case: Case, args: Any) -> list[str]:
    if case.evidence is not None:
        return list(case.evidence)
    if isinstance(args, dict) and isinstance(args.get("path"), str):
        return [f"{args['path']}:1"]
    return ["README.md:1"] if case.tree == "hostile" else ["visible.txt:1"]


def run_child_case(case: Case, trees: Trees, traces: pathlib.Path) -> Outcome:
    """The case's call made by a scripted child, then an answer citing the case's path."""
    root = trees.get(case.tree)
    args = fill(case.args, root)
    evidence = child_evidence(case, args)
    tool_call = call(case.tool)
    tool_call["arguments"] = args
    llm = ScriptedLLM(
        [
            [tool_call],
            final(status="completed", summary="looked", findings=["one"], evidence=evidence),
        ]
    )
    profile = outrider.EXPLORE_PROFILE.replace(
        name="attack", gate_retries=0, timeout_seconds=CHILD_TIMEOUT
    )
    started = time.perf_counter()
    try:
        launcher = outrider.SubagentLauncher(root, llm, trace_dir=traces, profiles=[profile])
        result = launcher.launch(outrider.SubagentRequest(profile_name="attack", task="attack"))
    except Exception as exc:
        out = Outcome(case.id, "child", time.perf_counter() - started, CHILD_TIMEOUT)
        out.crashed = True
        out.problems.append(f"raised {type(exc).__name__}: {exc}"[:500])
        return out
    out = Outcome(case.id, "child", time.perf_counter() - started, CHILD_TIMEOUT)
    trace = ""
    if result.trace_path:
        trace = pathlib.Path(result.trace_path).read_text(errors="replace")
    seen = "\n".join(
        [repr(result), json.dumps(result.to_dict()), str(result.error), trace]
        + [json.dumps(r) for r in llm.requests]
    )
    found = leaks(seen, arg_strings(args) + arg_strings(evidence))
    if found:
        out.escaped = True
        out.problems.append(f"outside data reached the child's outputs: {found}")
    if result.trace_path and pathlib.Path(result.trace_path).resolve().is_relative_to(root):
        out.problems.append(f"trace inside the root: {result.trace_path}")
    acceptable = {"failed"} if case.child_fails else {"completed", "partial", "unverified"}
    if case.child_fails and "panic" in str(result.error).lower():
        out.crashed = True
        out.problems.append(f"the child panicked: {result.error!r}"[:500])
    timed_out = "timeout" in (result.terminal_reason, result.failure_reason)
    if result.status not in acceptable and not timed_out:
        out.problems.append(
            f"child ended {result.status}/{result.terminal_reason}: {result.error!r}"[:500]
        )
    if case.tool == "Read" and case.expect == DENIED and result.status == "completed":
        out.escaped = True
        out.problems.append(f"the gate accepted evidence the Read refused: {evidence}")
    if out.hung:
        out.problems.append(f"took {out.elapsed:.2f} s under a {CHILD_TIMEOUT} s limit")
    changed = trees.changed(case.tree)
    if changed:
        out.problems.append(f"the tree changed: {changed[:5]}")
    return out


@contextlib.contextmanager
def workspace(base: pathlib.Path) -> Iterator[tuple[Trees, pathlib.Path]]:
    """Trees under ``base/trees`` and a trace directory beside them (never inside a root)."""
    trees = Trees(base / "trees")
    trees.base.mkdir(parents=True, exist_ok=True)
    traces = base / "traces"
    try:
        yield trees, traces
    finally:
        trees.close()
