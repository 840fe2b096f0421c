"""``python -m outrider``: the same as the ``outrider`` command."""

from outrider.cli import main

raise SystemExit(main())
