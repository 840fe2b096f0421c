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


def test_every_missing_extra_error_is_one_type() -> None:
    """Each "install the X extra" error is a MissingExtraError (#22.5): a raise whose message
    says how to install something builds that type, which stays an ImportError and a
    ConfigError (what those places raised before), so old except clauses still catch it."""
    import ast

    assert issubclass(outrider.MissingExtraError, ImportError)
    assert issubclass(outrider.MissingExtraError, outrider.ConfigError)
    pkg = pathlib.Path(outrider.__file__).parent
    offenders = []
    for file in sorted(pkg.rglob("*.py")):
        source = file.read_text()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                continue
            text = ast.get_source_segment(source, node) or ""
            if "install_hint" not in text and "pip install" not in text:
                continue
            if not ast.unparse(node.exc.func).startswith("MissingExtraError"):
                offenders.append(f"{file.name}:{node.lineno}")
    assert offenders == []
    error = outrider.MissingExtraError.needs("Thing()", "pkg", "extra", ImportError("gone"))
    assert str(error).startswith(
        "Thing() needs the pkg package, which could not be imported (gone)"
    )
    assert "; install it with: pip install" in str(error) and error.extra == "extra"


def test_native_classes_have_every_method_at_home() -> None:
    """Nothing is attached to a class when outrider and its modules are imported (#22.1):
    every method of a class in outrider._core is declared natively (src/py), so its __dict__
    holds native descriptors only; the Python bodies stay in their modules."""
    import importlib
    import pkgutil
    import types

    for info in pkgutil.walk_packages(outrider.__path__, "outrider."):
        if info.name in ("outrider.__main__", "outrider.pytest_plugin"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional framework that is not installed
            continue

    def python_made(value: object) -> bool:
        inner = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
        return isinstance(inner, types.FunctionType)

    attached = [
        f"{cls.__name__}.{name}"
        for cls in vars(outrider._core).values()
        if isinstance(cls, type) and cls.__module__ == "outrider._core"
        for name, value in vars(cls).items()
        if python_made(value)
    ]
    assert attached == []
    launch_result = outrider._core.SubagentLaunchResult
    assert type(vars(launch_result)["explore"]).__name__ == "getset_descriptor"
    # The entry-point classes are Python subclasses of their native halves, defined whole in
    # outrider._entry (their async methods must be coroutine functions).
    for entry in (outrider.SubagentLauncher, outrider.MainAgent, outrider.TaskTool):
        assert entry.__bases__ == (getattr(outrider._core, entry.__name__),)
        own = [v for v in vars(entry).values() if isinstance(v, types.FunctionType)]
        assert own and all(f.__module__ == "outrider._entry" for f in own)
