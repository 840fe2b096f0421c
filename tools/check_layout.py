"""Checks the crate's layout (run by `make lint`); exits 1 on a violation.

    python3 tools/check_layout.py [SRC_DIR]

1. No import cycles between source files. `crate::a::b::...` resolves to the longest module path
   that is a file (src/a/b.rs or src/a/b/mod.rs); `super::` and `self::` likewise; a mod.rs or
   lib.rs also depends on the child modules it re-exports from. In-file `mod tests` are ignored.
2. The Python binding (src/py/) reaches the core only through its front door, `crate::api`.
3. Lower layers never import upward: a module (a top-level file or folder of src/) names
   `crate::<m>` only for modules of its own layer or a lower one in LAYERS. Comments and test
   code (in-file `mod tests`, files named tests.rs) are not checked. A module missing from
   LAYERS is reported as unranked, not refused, until it is given its place.
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

# The layers, lowest first: a module may import its own layer and the layers below it.
LAYERS: dict[str, int] = {
    # 0: leaves that import no other module of the crate
    "pyjson": 0,  # Python-shaped JSON values and reprs
    "redact": 0,  # secret removal
    "exec": 0,  # the one runtime, the blocking pool, caller context
    "cancel": 0,  # CancelToken
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
    upward, unranked = upward_imports(root)
    problems.extend(sorted(set(upward)))
    for name in sorted(unranked):
        print(f"note: module '{name}' has no layer in tools/check_layout.py LAYERS")
    for p in problems:
        print(p)
    print(f"layout: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")))
