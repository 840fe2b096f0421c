"""Type-check the README's Python examples with mypy --strict (``make typecheck-readme``).

Every ```python block of README.md goes, in order, into the body of one ``async def`` (so the
quick start's ``await`` is legal and a later block may use what an earlier one defined), each
block headed by a comment with its README line so mypy's messages point back to it::

    python tools/readme_examples.py            # check; exit 1 with mypy's messages on failure
    python tools/readme_examples.py --print    # show the generated module
"""

from __future__ import annotations

import os
import pathlib
import re
import sys
import tempfile
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)

HEADER = '''"""Generated from README.md by tools/readme_examples.py: do not edit."""
# mypy: disable-error-code="empty-body"
# (the README elides bodies with `...`; every other error of --strict applies)

from __future__ import annotations

from typing import Any

import outrider


async def readme() -> None:
'''


def blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of every ```python block."""
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start(1)) + 1
        found.append((line, match.group(1)))
    return found


def module(text: str) -> str:
    """The README's examples as one module."""
    parts = [HEADER]
    for line, code in blocks(text):
        parts.append(f"    # README.md:{line}\n")
        parts.append(textwrap.indent(code, "    ", lambda s: True))
    return "".join(parts)


def check(readme: pathlib.Path) -> int:
    from mypy import api

    code = module(readme.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "readme_examples.py"
        path.write_text(code, encoding="utf-8")
        os.environ["MYPYPATH"] = str(ROOT / "python")
        out, err, status = api.run(
            [
                "--strict",
                "--config-file",
                str(ROOT / "pyproject.toml"),
                "--no-incremental",
                str(path),
            ]
        )
    out = out.replace(str(path), "readme_examples.py")
    sys.stdout.write(out)
    sys.stderr.write(err)
    if status:
        print(
            "(tools/readme_examples.py --print shows the module; the # README.md:N comments map lines back)"
        )
    return status


def main(argv: list[str]) -> int:
    readme = ROOT / "README.md"
    if argv[1:] == ["--print"]:
        sys.stdout.write(module(readme.read_text(encoding="utf-8")))
        return 0
    if argv[1:]:
        print("usage: readme_examples.py [--print]", file=sys.stderr)
        return 2
    return check(readme)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
