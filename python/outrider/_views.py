"""Which Jupyter view shows each outrider type: one table, and where every Python-facing class
has its methods.

**The table.** :mod:`outrider._display` holds every renderer and registers them here once, in
one table (type -> HTML renderer, Markdown renderer). A class shows itself through
:func:`html` and :func:`markdown`: the native result classes from their ``_repr_html_`` and
``_repr_markdown_`` (declared in ``src/py``), :class:`~outrider.Trace` and
:class:`~outrider.MainRunResult` through :class:`Viewed`. So the data modules
(:mod:`outrider.trace`, :mod:`outrider._mainrun`) never import the views, which import them.

**Where a class's methods are.** Every public class has one home, chosen per class:

* The native result classes (``ExploreResult``, ``VerificationResult``,
  ``SubagentLaunchResult``, ``CompletionVerdict``) and the other native value classes
  (``RuntimeProfile``, ``SubagentRequest``, ``OpenAICompatible``, ``OfflineScout``) are the
  classes users get: the core builds them, they pickle through ``from_dict``, and
  ``isinstance`` must hold for every instance, so they stay native and ``_core.pyi`` (checked
  by stubtest) documents each whole. Every method is declared in the class's ``#[pymethods]``
  block in ``src/py``; where its body needs Python (``json``, pydantic, these views), the block
  calls one named function (``crate::py::in_python``): :mod:`outrider._interop`
  (``to_json``, ``==``, pydantic), :mod:`outrider._accessors` (``explore``, ``verification``,
  ``output``) and this module (the views).
* ``SubagentLauncher``, ``MainAgent`` and ``TaskTool`` are Python subclasses of their native
  halves, defined whole in :mod:`outrider._entry`: their ``async def`` entry points must be
  coroutine functions, which a native method cannot be; users build them (nothing the core
  returns is one) and they are not pickled.
* The other Python classes (``Trace``, ``MainRunResult``, the ``batch`` types) are defined,
  whole, in their own module.

Nothing is attached to a class when outrider is imported (``tests/test_package.py`` checks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Viewed", "html", "markdown", "register"]

Render = Callable[[Any], str]

_VIEWS: dict[type[Any], tuple[Render, Render]] = {}


def register(table: Mapping[type[Any], tuple[Render, Render]]) -> None:
    """Add the renderers of :mod:`outrider._display` (called once, by that module)."""
    _VIEWS.update(table)


def _views(obj: Any) -> tuple[Render, Render]:
    for cls in type(obj).__mro__:
        found = _VIEWS.get(cls)
        if found is not None:
            return found
    raise TypeError(f"outrider has no Jupyter view for {type(obj).__qualname__}")


def html(obj: Any) -> str:
    """The HTML view of ``obj`` (escaped, theme-neutral colours, long parts folded)."""
    return _views(obj)[0](obj)


def markdown(obj: Any) -> str:
    """The Markdown view of ``obj``."""
    return _views(obj)[1](obj)


class Viewed:
    """Jupyter's ``_repr_html_`` and ``_repr_markdown_`` for a Python class, from the table."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return html(self)

    def _repr_markdown_(self) -> str:
        return markdown(self)
