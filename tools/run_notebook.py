"""Execute a notebook headless with nbclient, as CI does: ``python tools/run_notebook.py NB``.

The kernel is ipykernel's ``python3`` started with this interpreter (talking over loopback TCP), in the notebook's directory,
with the same ``outrider`` first on its path and no ``LLM_*`` / ``LIGHT_LLM_*`` variables, so it
cannot reach a provider. Any error in a cell fails the run. ``--write`` saves the executed
notebook (outputs included) back in place.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

import nbclient
import nbformat

import outrider

# nbformat has no annotations; typed aliases keep mypy --strict checking our calls.
read_notebook: Callable[..., Any] = nbformat.read
write_notebook: Callable[..., Any] = nbformat.write


def kernel_env() -> dict[str, str]:
    """The environment of the kernel: ours, minus model settings, with outrider importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
    package_parent = str(pathlib.Path(outrider.__file__).resolve().parent.parent)
    rest = env.get("PYTHONPATH")
    env["PYTHONPATH"] = package_parent + (os.pathsep + rest if rest else "")
    return env


def execute(path: pathlib.Path, *, timeout: int = 600, extra_cells: Sequence[str] = ()) -> Any:
    """Run every cell of ``path`` (then ``extra_cells``, code appended for checks); return the
    executed notebook (raises on a failing cell)."""
    nb = read_notebook(path, as_version=4)
    new_code_cell: Callable[..., Any] = nbformat.v4.new_code_cell
    nb.cells.extend(new_code_cell(source) for source in extra_cells)
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.resolve().parent)}},
    )
    client.execute(env=kernel_env())
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=pathlib.Path)
    parser.add_argument("--write", action="store_true", help="save the outputs in place")
    args = parser.parse_args(argv)
    nb = execute(args.notebook)
    if args.write:
        write_notebook(nb, args.notebook)
    cells = sum(1 for c in nb.cells if c.cell_type == "code")
    print(f"{args.notebook}: {cells} code cells ran" + (", outputs saved" if args.write else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
