"""The installed package: version, public names, typing markers."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re

import outrider
import outrider._core

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_version_comes_from_cargo() -> None:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.M)
    assert found is not None
    assert outrider.__version__ == found.group(1)
    assert importlib.metadata.version("outrider") == outrider.__version__


def test_public_names_exist_and_are_listed() -> None:
    for name in outrider.__all__:
        assert hasattr(outrider, name), name
    assert set(outrider._core.__all__) <= set(outrider.__all__)


def test_typed_package_markers_ship() -> None:
    pkg = pathlib.Path(outrider.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()


def test_exception_hierarchy() -> None:
    assert issubclass(outrider.ContractError, outrider.OutriderError)
    assert issubclass(outrider.ContractError, ValueError)
    assert issubclass(outrider.ProfileError, outrider.OutriderError)
    assert issubclass(outrider.ProfileError, ValueError)


def test_export_lists_agree() -> None:
    """`outrider._core.__all__` (set in Rust) is the one list: the stub and the package follow it."""
    import ast

    import outrider.exceptions

    stub = ast.parse((pathlib.Path(outrider.__file__).parent / "_core.pyi").read_text())
    stub_all = next(
        ast.literal_eval(node.value)
        for node in stub.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    )
    assert sorted(stub_all) == sorted(outrider._core.__all__)
    exported = set(outrider._core.__all__) | set(outrider.exceptions.__all__) | {"Trace"}
    assert exported - {"ErrorDetails"} <= set(outrider.__all__)
    # Python-only API: the batch entry points (outrider.batch).
    python_only = {
        "ErrorDetails",
        "EvidenceCheck",
        "MainRunResult",
        "explore_many",
        "aexplore_many",
    }
    assert set(outrider.__all__) - exported == python_only - exported
    for name in outrider.exceptions.__all__:
        obj = getattr(outrider.exceptions, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, outrider.OutriderError), name
