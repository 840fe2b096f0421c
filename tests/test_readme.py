"""The README's examples: extracted by tools/readme_examples.py (mypy --strict runs in make lint)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_python_block_is_extracted_into_one_compilable_module() -> None:
    spec = importlib.util.spec_from_file_location(
        "readme_examples", ROOT / "tools" / "readme_examples.py"
    )
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules["readme_examples"] = tool
    spec.loader.exec_module(tool)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = tool.blocks(text)
    assert len(found) == text.count("```python") and len(found) >= 3
    code = tool.module(text)
    compile(code, "readme_examples.py", "exec")
    for line, block in found:
        assert f"    # README.md:{line}\n" in code
        assert text.splitlines()[line - 1] == block.splitlines()[0]
