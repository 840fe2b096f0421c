"""Checks the crate's layout (run by `make lint`); exits 1 on a violation.

    python3 tools/check_layout.py [SRC_DIR]

1. No import cycles between source files. A path resolves as rustc resolves it: `crate::` from
   the crate root, `self::` from the file's own module (src/a/b.rs is `a::b`, src/a/mod.rs is
   `a`), each `super::` one module up, and a bare first segment through the names the file has
   in scope (its `use` imports and its child modules). The path then lands on the longest module
   prefix that is a file; when the next segment is a name that file imports, resolution follows
   the import (so `super::Chunk`, re-exported by index/mod.rs from chunk.rs, lands on chunk.rs).
   A file depends on what its private `use`s and its code name; a `pub use` re-export counts
   only where the file's own code uses the name. In-file `mod tests`, comments and string
   literals are ignored. The cycles in KNOWN_CYCLES wait for their files' owners; each must be
   dropped from the list once it is gone.
2. The Python binding (src/py/) reaches the core only through its front door, `crate::api`.
3. Lower layers never import upward: a module (a top-level file or folder of src/) names
   `crate::<m>` only for modules of its own layer or a lower one in LAYERS. Comments and test
   code (in-file `mod tests`, files named tests.rs) are not checked. A module missing from
   LAYERS is reported as unranked, not refused, until it is given its place.
4. No function longer than MAX_FN_LINES lines (from its `fn` line to its closing brace), but for
   those named in LONG_FN_ALLOWED, which may only shrink out of the list.
"""

from __future__ import annotations

import pathlib
import re
import sys
from dataclasses import dataclass, field

# Comments, string and char literals (text that may look like a path or a brace); each is
# blanked down to its newlines, so line numbers stay.
LEXEMES = re.compile(
    r"//[^\n]*|/\*.*?\*/|(?<!\w)b?r(#*)\".*?\"\1|(?<!\w)b?\"(?:\\.|[^\"\\])*\""
    r"|(?<!\w)b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'",
    re.S,
)
# An in-file test module, private or not (`pub(crate) mod tests` shares fixtures with others).
IN_FILE_TESTS = re.compile(
    r"#\[cfg\(test\)\]\s*(?:pub(?:\s*\([^)]*\))?\s+)?mod \w*tests \{.*", re.S
)
USE_DECL = re.compile(r"(?<![\w$])(pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]+);")
CHILD_MOD = re.compile(r"(?<![\w$])(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
BODY_PATH = re.compile(r"(?<![\w$:])([A-Za-z_]\w*)((?:\s*::\s*\w+)+)")
USE_TOKEN = re.compile(r"\w+|::|[{},*]")
FN_HEAD = re.compile(r"(?<![\w$])fn\s+(\w+)")
OPENS = {"(": 1, "[": 1, ")": -1, "]": -1}
BRACES = {"{": 1, "}": -1}

Module = tuple[str, ...]
# The crate's own source folder: the allowlists below name its files only.
SRC = pathlib.Path(__file__).resolve().parent.parent / "src"


@dataclass
class Name:
    """A name in a file's scope (a `use` or a child `mod`): the module path it stands for
    (None: outside the crate) and whether it is re-exported (`pub use`)."""

    target: Module | None
    public: bool = False
    used: bool = True  # False for a re-export the file's own code never names


@dataclass
class SourceFile:
    """One .rs file: its module path, its code (without tests, comments, literals) and scope."""

    path: pathlib.Path
    module: Module
    code: str
    scope: dict[str, Name] = field(default_factory=dict)
    globs: list[Module] = field(default_factory=list)


def strip_code(text: str) -> str:
    """``text`` without comments, literals and the in-file test module; lines keep their numbers."""

    def blank(m: re.Match[str]) -> str:
        kept = "" if m.group().startswith("/") else '""'
        return kept + "\n" * m.group().count("\n")

    return IN_FILE_TESTS.sub("", LEXEMES.sub(blank, text))


def module_path(root: pathlib.Path, file: pathlib.Path) -> Module:
    """src/a/b.rs and src/a/b/mod.rs are module `a::b`; src/lib.rs is the root, ()."""
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def use_leaves(text: str) -> list[tuple[list[str], str | None]]:
    """The leaves of a use tree as (path, the name it binds; None for a glob or `as _`):
    `a::{self, b::C as D, e::*}` gives (a, a), (a::b::C, D), (a::e, None)."""
    tokens = [*USE_TOKEN.findall(text), ";"]
    pos = 0
    leaves: list[tuple[list[str], str | None]] = []

    def tree(prefix: list[str]) -> None:
        nonlocal pos
        path = list(prefix)
        while True:
            tok = tokens[pos]
            pos += 1
            if tok == "{":
                while tokens[pos] not in ("}", ";"):
                    if tokens[pos] == ",":
                        pos += 1
                    else:
                        tree(path)
                pos += 1
                return
            if tok == "*":
                leaves.append((path, None))
                return
            if tok == "::":
                continue
            if tok == "self" and path:
                tok = ""  # `a::{self}` binds `a`
            elif tok not in (",", "}", ";"):
                path.append(tok)
            if tokens[pos] == "as":
                alias = tokens[pos + 1]
                pos += 2
                leaves.append((path, None if alias == "_" else alias))
                return
            if tokens[pos] != "::":
                if tok in (",", "}", ";"):
                    pos -= 1
                leaves.append((path, path[-1] if path else None))
                return

    tree([])
    return leaves


def absolute(here: Module, path: list[str], scope: dict[str, Name]) -> Module | None:
    """``path`` as written in module ``here``, from the crate root: `crate::` starts at the root,
    `self::` at ``here``, each `super::` one module up, another first segment at the name the
    file has in scope. None when the path starts outside the crate (std, a dependency)."""
    if not path:
        return None
    head, rest = path[0], path[1:]
    if head == "crate":
        base: Module = ()
    elif head == "self":
        base = here
    elif head == "super":
        base = here[:-1]
    elif head in scope and scope[head].target is not None:
        base = scope[head].target  # type: ignore[assignment]
    else:
        return None
    while rest and rest[0] in ("super", "self"):
        base = base[:-1] if rest[0] == "super" else base
        rest = rest[1:]
    return base + tuple(rest)


def parse(root: pathlib.Path, file: pathlib.Path) -> SourceFile:
    """A file's module path, code and scope (its child modules and `use` imports)."""
    mod = module_path(root, file)
    src = SourceFile(file, mod, strip_code(file.read_text()))
    for m in CHILD_MOD.finditer(src.code):
        src.scope[m.group(1)] = Name((*mod, m.group(1)))
    decls = [(bool(m.group(1)), use_leaves(m.group(2))) for m in USE_DECL.finditer(src.code)]
    body = USE_DECL.sub("", src.code)
    # A use may start at a name another use brings in (`use crate::a; use a::b;`).
    for _ in range(3):
        for public, leaves in decls:
            for path, name in leaves:
                if name is not None:
                    used = not public or re.search(rf"(?<![\w$.:]){name}\b", body) is not None
                    src.scope[name] = Name(absolute(mod, path, src.scope), public, used)
    src.globs = [
        t
        for _, leaves in decls
        for path, name in leaves
        if name is None and (t := absolute(mod, path, src.scope)) is not None
    ]
    src.code = body
    return src


class Crate:
    """The crate's files and the dependencies between them, as rustc resolves paths."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.files = {
            src.module: src for src in (parse(root, f) for f in sorted(root.rglob("*.rs")))
        }

    def land(self, path: Module, hops: int = 0) -> SourceFile | None:
        """The file that defines what ``path`` names: the longest module prefix that is a file,
        following that file's imports when the next segment is one (a re-export)."""
        for n in range(len(path), -1, -1):
            src = self.files.get(path[:n])
            if src is None:
                continue
            name = src.scope.get(path[n]) if n < len(path) else None
            if name is not None and hops < 16:
                if name.target is None:
                    return None
                return self.land(name.target + path[n + 1 :], hops + 1)
            return src
        return None

    def dependencies(self, src: SourceFile) -> set[pathlib.Path]:
        """The files ``src``'s code depends on: what its imports and paths land on."""
        targets: list[Module] = list(src.globs)
        for name, entry in src.scope.items():
            is_child = entry.target == (*src.module, name) and entry.target in self.files
            if entry.target is not None and entry.used and not is_child:
                targets.append(entry.target)
        for m in BODY_PATH.finditer(src.code):
            path = [p.strip() for p in (m.group(1) + m.group(2)).split("::")]
            target = absolute(src.module, path, src.scope)
            if target is not None:
                targets.append(target)
        deps = set()
        for t in targets:
            landed = self.land(t)
            if landed is not None and landed is not src:
                deps.add(landed.path)
        return deps

    def cycles(self) -> list[list[pathlib.Path]]:
        """The strongly connected components of more than one file (Tarjan)."""
        deps = {src.path: self.dependencies(src) for src in self.files.values()}
        index: dict[pathlib.Path, int] = {}
        low: dict[pathlib.Path, int] = {}
        stack: list[pathlib.Path] = []
        on_stack: set[pathlib.Path] = set()
        found: list[list[pathlib.Path]] = []

        def visit(v: pathlib.Path) -> None:
            index[v] = low[v] = len(index)
            stack.append(v)
            on_stack.add(v)
            for w in sorted(deps[v]):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

        sys.setrecursionlimit(10_000)
        for v in sorted(deps):
            if v not in index:
                visit(v)
        return sorted(found)

    def long_functions(self) -> list[tuple[str, str, int, int]]:
        """Every function longer than MAX_FN_LINES lines: (file, name, first line, lines)."""
        found = []
        for src in self.files.values():
            code = strip_code(src.path.read_text())
            rel = src.path.relative_to(self.root).as_posix()
            for name, line, lines in function_spans(code):
                if lines > MAX_FN_LINES:
                    found.append((rel, name, line, lines))
        return sorted(found)


def function_spans(code: str) -> list[tuple[str, int, int]]:
    """Each function with a body in ``code`` (already stripped): (name, `fn` line, lines from its
    `fn` line to its closing brace)."""
    spans = []
    for m in FN_HEAD.finditer(code):
        # The body starts at the first `{` outside the signature's () and []; a `;` there first
        # ends a declaration without a body.
        depth, i = 0, m.end()
        while i < len(code) and not (depth == 0 and code[i] in "{;"):
            depth += OPENS.get(code[i], 0)
            i += 1
        if i >= len(code) or code[i] == ";":
            continue
        braces, j = 0, i
        while j < len(code):
            braces += BRACES.get(code[j], 0)
            if braces == 0:
                break
            j += 1
        first = code.count("\n", 0, m.start()) + 1
        spans.append((m.group(1), first, code.count("\n", m.start(), j) + 1))
    return spans


# The layers, lowest first: a module may import its own layer and the layers below it.
LAYERS: dict[str, int] = {
    # 0: leaves that import no other module of the crate
    "pyjson": 0,  # Python-shaped JSON values and reprs
    "redact": 0,  # secret removal
    "exec": 0,  # the one runtime, the blocking pool, caller context
    "cancel": 0,  # CancelToken
    "fspath": 0,  # paths resolved and directories located as the kernel sees them
    # 1: the read-only tools, the model layer, and the vocabulary every layer shares
    "tools": 1,
    "index": 1,  # the code index the scout's Search ranks with (#19)
    "llm": 1,
    "args": 1,
    "error": 1,
    "contract": 1,
    "schema": 1,
    "profile": 1,
    "evidence": 1,
    "tuning": 1,  # the assists' knobs, a profile field
    # 2: traces (event names, terminal reasons, the confined trace directory)
    "trace": 2,
    # 3: the loop, and what an embedding host needs
    "runner": 3,
    "host": 3,
    # 4: the launch layer
    "agent": 4,
    # 5: the front door for embedders and the binding
    "api": 5,
    # 6: the Python binding
    "py": 6,
}

# Functions longer than this are refused: a reader should see a function whole.
MAX_FN_LINES = 120
# The long functions still waiting to be split, by (file under src/, name), in files whose
# owner is rewriting them (#34). An entry goes when its function is split; none may be added.
LONG_FN_ALLOWED: set[tuple[str, str]] = set()
# The import cycles still waiting to be broken, each by its files, in files whose owner is
# rewriting them (#34). An entry goes when its cycle is broken; none may be added.
KNOWN_CYCLES: set[frozenset[str]] = set()

CRATE_PATH = re.compile(r"\bcrate::(\w+)")
COMMENT_LINE = re.compile(r"^\s*//.*$", re.M)


def upward_imports(root: pathlib.Path) -> tuple[list[str], set[str]]:
    """Rule 3: each `crate::<m>` that names a higher layer, and the modules not in LAYERS."""
    problems: list[str] = []
    unranked: set[str] = set()
    for f in sorted(root.rglob("*.rs")):
        rel = f.relative_to(root)
        module = rel.parts[0].removesuffix(".rs")
        if module == "lib" or f.name == "tests.rs":
            continue
        if module not in LAYERS:
            unranked.add(module)
            continue
        text = COMMENT_LINE.sub("", IN_FILE_TESTS.sub("", f.read_text()))
        for m in CRATE_PATH.finditer(text):
            target = m.group(1)
            if target not in LAYERS:
                if (root / f"{target}.rs").exists() or (root / target).is_dir():
                    unranked.add(target)
                continue
            if LAYERS[target] > LAYERS[module]:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(
                    f"{rel}:{line}: {module} (layer {LAYERS[module]}) imports crate::{target}"
                    f" (layer {LAYERS[target]}): move what it needs down, or the code up"
                )
    return problems, unranked


def main(root: pathlib.Path) -> int:
    crate = Crate(root)
    problems = []
    # The allowlists name the crate's own files: another tree (a test's) gets none.
    own = root.resolve() == SRC
    known = KNOWN_CYCLES if own else set()
    cycles = {frozenset(x.relative_to(root).as_posix() for x in c) for c in crate.cycles()}
    for c in sorted(cycles - known, key=sorted):
        problems.append("import cycle: " + " <-> ".join(sorted(c)))
    for c in sorted(known - cycles, key=sorted):
        problems.append(f"known cycle {' <-> '.join(sorted(c))} is gone: drop it from KNOWN_CYCLES")
    for f in sorted((root / "py").glob("*.rs")):
        for m in re.finditer(r"\bcrate::(\w+)", f.read_text()):
            if m.group(1) not in ("api", "py"):
                problems.append(
                    f"{f.relative_to(root)}: reaches crate::{m.group(1)} (use crate::api)"
                )
    upward, unranked = upward_imports(root)
    problems.extend(sorted(set(upward)))
    allowed = LONG_FN_ALLOWED if own else set()
    long = crate.long_functions()
    for rel, name, line, lines in long:
        if (rel, name) not in allowed:
            problems.append(
                f"{rel}:{line}: fn {name} has {lines} lines (at most {MAX_FN_LINES}): split it"
            )
    for rel, name in sorted(allowed - {(rel, name) for rel, name, _, _ in long}):
        problems.append(f"{rel}: fn {name} is short now: drop it from LONG_FN_ALLOWED")
    for name in sorted(unranked):
        print(f"note: module '{name}' has no layer in tools/check_layout.py LAYERS")
    for p in problems:
        print(p)
    print(f"layout: {len(crate.files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")))
