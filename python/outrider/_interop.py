"""The Python bodies of the native result types' ``to_json``, ``==``/``hash`` (for the two
without a core equality) and pydantic support: what only needs their ``to_dict()``.

The methods themselves are declared on the native classes (``src/py/contract.rs`` and
``launcher.rs``, through ``crate::py::in_python``), which call these functions; see
:mod:`outrider._views` for why the native classes stay the classes users get.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from outrider import _core

__all__ = ["eq", "hash_of", "pydantic_schema", "to_json"]


def to_json(self: Any, indent: int | str | None = None) -> str:
    """:meth:`to_dict` as JSON text (non-ASCII kept; ``indent`` as for :func:`json.dumps`)."""
    return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)


def _state(obj: Any) -> str:
    """What two results must share to be equal: every field, nested results and a verdict's
    launch included (as canonical JSON, so it hashes)."""
    data: dict[str, Any] = obj.to_dict()
    if isinstance(obj, _core.CompletionVerdict):
        data = {"verdict": data, "launch": None if obj.launch is None else obj.launch.to_dict()}
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def eq(self: Any, other: object) -> object:
    if type(other) is not type(self):
        return NotImplemented
    return _state(self) == _state(other)


def hash_of(self: Any) -> int:
    return hash((type(self).__name__, _state(self)))


def pydantic_schema(cls: type[Any], source: Any, handler: Any) -> Any:
    """Validate an instance as is, or a dict (any mapping) through ``from_dict``; serialise
    with ``to_dict()``. Every refusal is a ``ValueError``, which pydantic reports as a
    ``ValidationError`` (a ``TypeError`` would escape it)."""
    from pydantic_core import core_schema

    name = cls.__name__

    def validate(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            from_dict: Callable[[dict[str, Any]], Any] | None = getattr(cls, "from_dict", None)
            if from_dict is None:
                raise ValueError(
                    f"a {name} cannot be built from a dict (only {name} instances are "
                    "accepted): the core has no from_dict for it"
                )
            try:
                # from_dict takes a dict: a MappingProxyType or other Mapping is copied into one.
                data = value if type(value) is dict else dict(value)
            except Exception as err:
                raise ValueError(
                    f"expected a {name} or a dict of its to_dict() fields, got a "
                    f"{type(value).__name__} that could not be read as a dict: {err}"
                ) from err
            try:
                return from_dict(data)
            except TypeError as err:  # ArgumentTypeError: a key or field of the wrong type
                raise ValueError(str(err)) from err
        raise ValueError(
            f"expected a {name} or a dict of its to_dict() fields, got {type(value).__name__}"
        )

    shape = _dict_shape(cls, core_schema)
    return core_schema.no_info_plain_validator_function(
        validate,
        json_schema_input_schema=shape,
        serialization=core_schema.plain_serializer_function_ser_schema(
            lambda v: v.to_dict(), return_schema=shape
        ),
    )


def _dict_shape(cls: type[Any], cs: Any) -> Any:
    """The JSON schema of ``to_dict()`` (what validates and what is dumped): field by field
    for the two contracts, an object for the rest."""
    strings = cs.list_schema(cs.str_schema())
    counts = cs.dict_schema(cs.str_schema(), cs.int_schema())

    def field(schema: Any, required: bool = False) -> Any:
        return cs.typed_dict_field(schema, required=required)

    if cls is _core.ExploreResult:
        fields = {
            "status": field(cs.literal_schema(["completed", "partial"]), True),
            "summary": field(cs.str_schema(), True),
            "findings": field(strings),
            "evidence": field(strings),
            "unresolved_questions": field(strings),
            "tool_usage": field(counts),
            "terminal_reason": field(cs.str_schema()),
        }
    elif cls is _core.VerificationResult:
        fields = {
            "verdict": field(cs.literal_schema(["PASS", "FAIL", "PARTIAL", "UNVERIFIED"]), True),
            "reasons": field(strings),
            "findings": field(strings),
            "evidence": field(strings),
            "child_session_id": field(cs.nullable_schema(cs.str_schema())),
            "child_run_id": field(cs.nullable_schema(cs.str_schema())),
            "terminal_reason": field(cs.str_schema()),
            "tool_usage": field(counts),
            "token_usage": field(cs.int_schema()),
        }
    else:
        return cs.dict_schema(cs.str_schema(), cs.any_schema())
    return cs.typed_dict_schema(fields, cls_name=cls.__name__)
