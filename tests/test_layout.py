"""The crate's layering rules (tools/check_layout.py, also run by `make lint`): no import cycle
(with paths resolved as rustc resolves them), the binding only through `crate::api`, no lower
layer importing a higher one, and no function over 120 lines."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECK = ROOT / "tools" / "check_layout.py"


def check(src: pathlib.Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(CHECK), str(src)], capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stdout


def test_the_crate_keeps_its_layers() -> None:
    code, out = check(ROOT / "src")
    assert code == 0, out


def test_an_upward_import_is_refused(tmp_path: pathlib.Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "mod.rs").write_text("pub struct CancelToken;\n")
    (tmp_path / "tools" / "mod.rs").write_text(
        "// a comment may name crate::runner\nuse crate::runner::CancelToken;\n"
    )
    (tmp_path / "tools" / "tests.rs").write_text("use crate::runner::CancelToken;\n")
    code, out = check(tmp_path)
    assert code == 1
    assert out.splitlines() == [
        "tools/mod.rs:2: tools (layer 1) imports crate::runner (layer 3): move what it needs down,"
        " or the code up",
        "layout: 3 files, 1 problem(s)",
    ]


def layout_module() -> Any:
    spec = importlib.util.spec_from_file_location("check_layout", CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_layout"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def write_tree(root: pathlib.Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_paths_resolve_as_rustc_resolves_them() -> None:
    absolute = layout_module().absolute
    in_file, in_mod_rs = ("index", "chunk"), ("index",)  # index/chunk.rs, index/mod.rs
    assert [
        absolute(in_file, path.split("::"), {})
        for path in ("self::x", "super::x", "super::super::x", "crate::x", "self::super::x")
    ] == [("index", "chunk", "x"), ("index", "x"), ("x",), ("x",), ("index", "x")]
    assert [absolute(in_mod_rs, path.split("::"), {}) for path in ("self::x", "super::x")] == [
        ("index", "x"),
        ("x",),
    ]
    assert absolute(in_file, ["std", "fs"], {}) is None


def test_use_trees_bind_their_leaves() -> None:
    leaves = layout_module().use_leaves("crate::{a::{self, b as c}, d::*, e::F as _, g}")
    assert leaves == [
        (["crate", "a"], "a"),
        (["crate", "a", "b"], "c"),
        (["crate", "d"], None),
        (["crate", "e", "F"], None),
        (["crate", "g"], "g"),
    ]


def test_a_cycle_between_sibling_files_through_super_is_refused(tmp_path: pathlib.Path) -> None:
    # `super::` in a file that is not a mod.rs names its folder's module, not the crate root.
    write_tree(
        tmp_path,
        {
            "lib.rs": "pub mod index;\n",
            "index/mod.rs": "pub mod chunk;\npub mod rank;\n",
            "index/chunk.rs": 'fn f() -> bool { super::rank::is_test("x") }\n',
            "index/rank.rs": "use super::chunk::Chunk;\npub fn is_test(p: &str) -> bool { true }\n",
        },
    )
    code, out = check(tmp_path)
    assert (code, out.splitlines()) == (
        1,
        ["import cycle: index/chunk.rs <-> index/rank.rs", "layout: 4 files, 1 problem(s)"],
    )


def test_a_re_export_is_followed_to_the_file_that_defines_the_name(
    tmp_path: pathlib.Path,
) -> None:
    # chunk.rs names `super::Terms`, which mod.rs only re-exports from text.rs: chunk.rs depends
    # on text.rs, and mod.rs (which uses chunk.rs) is no part of a cycle.
    write_tree(
        tmp_path,
        {
            "lib.rs": "pub mod index;\n",
            "index/mod.rs": "mod chunk;\nmod text;\npub use text::Terms;\nuse chunk::cut;\n",
            "index/chunk.rs": "use super::Terms;\npub fn cut(t: &Terms) {}\n",
            "index/text.rs": "pub struct Terms;\n",
        },
    )
    crate = layout_module().Crate(tmp_path)
    deps = {
        "/".join(m) or "lib": sorted(
            p.relative_to(tmp_path).as_posix() for p in crate.dependencies(f)
        )
        for m, f in crate.files.items()
    }
    assert deps == {
        "lib": [],
        "index": ["index/chunk.rs"],
        "index/chunk": ["index/text.rs"],
        "index/text": [],
    }
    assert crate.cycles() == []


def test_a_long_function_is_refused_and_braces_in_literals_do_not_count(
    tmp_path: pathlib.Path,
) -> None:
    line = "    let x = 1;\n"
    write_tree(
        tmp_path,
        {
            "lib.rs": "mod a;\n",
            # 120 lines, the most allowed: a '{', a "}" and a `// }` neither end nor extend it.
            "a.rs": "fn fits() {\n    let c = '{'; // }\n"
            + line * 116
            + '    "}";\n}\n'
            # 121 lines, over the limit (a `;` inside the signature's [] is no declaration end).
            + "fn over(\n    x: [u8; 2],\n) {\n"
            + line * 117
            + "}\n",
        },
    )
    code, out = check(tmp_path)
    assert (code, [line for line in out.splitlines() if not line.startswith("note:")]) == (
        1,
        [
            "a.rs:121: fn over has 121 lines (at most 120): split it",
            "layout: 2 files, 1 problem(s)",
        ],
    )
