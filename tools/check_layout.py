"""Checks the crate's layout (run by `make lint`); exits 1 on a violation.

    python3 tools/check_layout.py [SRC_DIR]

1. No import cycles between source files. `crate::a::b::...` resolves to the longest module path
   that is a file (src/a/b.rs or src/a/b/mod.rs); `super::` and `self::` likewise; a mod.rs or
   lib.rs also depends on the child modules it re-exports from. In-file `mod tests` are ignored.
2. The Python binding (src/py/) reaches the core only through its front door, `crate::api`.
"""

from __future__ import annotations

import pathlib
import re
import sys

SKIP_HEADS = {"crate", "super", "self", "std", "core", "serde", "serde_json", "pyo3", "tokio"}
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")
GROUPED = re.compile(r"use\s+(crate|super|self)((?:::\w+)*)::\{([^;]*)\};", re.S)
CHILD_USE = re.compile(r"\buse\s+(\w+)((?:::\w+)*)")
IN_FILE_TESTS = re.compile(r"#\[cfg\(test\)\]\s*mod \w*tests \{.*", re.S)


def module_path(root: pathlib.Path, file: pathlib.Path) -> tuple[str, ...]:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def main(root: pathlib.Path) -> int:
    files = {module_path(root, f): f for f in root.rglob("*.rs")}

    def resolve(path: list[str]) -> pathlib.Path | None:
        for n in range(len(path), 0, -1):
            if tuple(path[:n]) in files:
                return files[tuple(path[:n])]
        return None

    deps: dict[pathlib.Path, set[pathlib.Path]] = {f: set() for f in files.values()}
    for mod, f in files.items():
        text = IN_FILE_TESTS.sub("", f.read_text())
        is_dir_mod = f.name in ("mod.rs", "lib.rs")
        # `self::` names this module's children in a mod.rs, its siblings' parent otherwise.
        here = list(mod) if is_dir_mod else list(mod[:-1])
        bases = {"crate": [], "self": here, "super": here[:-1]}
        paths = []
        for m in GROUPED.finditer(text):
            prefix = [p for p in m.group(2).split("::") if p]
            for item in m.group(3).split(","):
                item = item.split(" as ")[0].strip().replace("{", "").replace("}", "")
                sub = [p for p in item.split("::") if p and p != "self"]
                if sub:
                    paths.append(bases[m.group(1)] + prefix + sub)
        for m in PATH.finditer(text):
            paths.append(bases[m.group(1)] + [p for p in m.group(2).split("::") if p])
        if is_dir_mod:
            for m in CHILD_USE.finditer(text):
                if m.group(1) not in SKIP_HEADS:
                    paths.append([*mod, m.group(1)] + [p for p in m.group(2).split("::") if p])
        for path in paths:
            target = resolve(path)
            if target is not None and target != f:
                deps[f].add(target)

    # Strongly connected components (Tarjan): each with more than one file is a cycle.
    index: dict[pathlib.Path, int] = {}
    low: dict[pathlib.Path, int] = {}
    stack: list[pathlib.Path] = []
    on_stack: set[pathlib.Path] = set()
    cycles: list[list[pathlib.Path]] = []

    def visit(v: pathlib.Path) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in deps[v]:
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
                cycles.append(component)

    sys.setrecursionlimit(10_000)
    for v in deps:
        if v not in index:
            visit(v)

    problems = [
        "import cycle: " + " <-> ".join(sorted(str(x.relative_to(root)) for x in c)) for c in cycles
    ]
    for f in sorted((root / "py").glob("*.rs")):
        for m in re.finditer(r"\bcrate::(\w+)", f.read_text()):
            if m.group(1) not in ("api", "py"):
                problems.append(
                    f"{f.relative_to(root)}: reaches crate::{m.group(1)} (use crate::api)"
                )
    for p in problems:
        print(p)
    print(f"layout: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")))
