"""The crate's layering rules (tools/check_layout.py, also run by `make lint`): no import cycle,
the binding only through `crate::api`, and no lower layer importing a higher one."""

from __future__ import annotations

import pathlib
import subprocess
import sys

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
