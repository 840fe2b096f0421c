"""``python -m outrider``: the same as the ``outrider`` command."""

from outrider.cli import main

# Guarded so that importing the module (mypy.stubtest, pydoc, IDEs) does not run the command.
if __name__ == "__main__":
    raise SystemExit(main())
