"""Type-check the README's Python examples with mypy --strict (``make typecheck-readme``).

Every ```python block of README.md stands on its own (tests/test_readme.py runs each one by
itself), so each becomes its own module, headed by a comment with its README line so mypy's
messages point back to it. A block that awaits at top level (allowed only where the README's
text says "in a notebook") goes into the body of an ``async def``, as a notebook cell runs::

    python tools/readme_examples.py            # check; exit 1 with mypy's messages on failure
    python tools/readme_examples.py --print    # show the generated modules
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

HEADER = '''"""Generated from README.md:{line} by tools/readme_examples.py: do not edit."""
# mypy: disable-error-code="empty-body"
# (the README elides bodies with `...`; every other error of --strict applies)
'''


def blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of every ```python block."""
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start(1)) + 1
        found.append((line, match.group(1)))
    return found


def intro(text: str, line: int) -> str:
    """The README text between the block starting at ``line`` and the block before it."""
    before = text.splitlines()[: line - 2]  # up to the line above this block's opening fence
    start = max((i for i, s in enumerate(before) if s.startswith("```")), default=-1)
    return "\n".join(before[start + 1 :])


def awaits_at_top_level(code: str) -> bool:
    """Whether ``code`` uses ``await`` (or ``async for``/``with``) outside any function."""
    try:
        compile(code, "<README block>", "exec", dont_inherit=True)
    except SyntaxError as err:
        return "outside" in str(err) and ("await" in str(err) or "async" in str(err))
    return False


def module(line: int, code: str) -> str:
    """One block as a module: as it is, or (top-level await) as an ``async def``'s body."""
    head = HEADER.format(line=line)
    if not awaits_at_top_level(code):
        return head + f"# README.md:{line}\n" + code
    body = textwrap.indent(code, "    ", lambda s: True)
    return head + f"\n\nasync def notebook_cell() -> None:\n    # README.md:{line}\n" + body


def modules(text: str) -> list[tuple[str, str]]:
    """(module file name, source) of every block."""
    return [(f"readme_block_{line}.py", module(line, code)) for line, code in blocks(text)]


def check(readme: pathlib.Path) -> int:
    from mypy import api

    found = modules(readme.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, code in found:
            path = pathlib.Path(tmp) / name
            path.write_text(code, encoding="utf-8")
            paths.append(str(path))
        os.environ["MYPYPATH"] = str(ROOT / "python")
        out, err, status = api.run(
            ["--strict", "--config-file", str(ROOT / "pyproject.toml"), "--no-incremental", *paths]
        )
    out = out.replace(tmp + os.sep, "")
    sys.stdout.write(out)
    sys.stderr.write(err)
    if status:
        print("(tools/readme_examples.py --print shows the modules; readme_block_N is README.md:N)")
    return status


def main(argv: list[str]) -> int:
    readme = ROOT / "README.md"
    if argv[1:] == ["--print"]:
        for name, code in modules(readme.read_text(encoding="utf-8")):
            sys.stdout.write(f"# ===== {name}\n{code}\n")
        return 0
    if argv[1:]:
        print("usage: readme_examples.py [--print]", file=sys.stderr)
        return 2
    return check(readme)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
