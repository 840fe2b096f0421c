"""ExploreResult / VerificationResult: the reference's strict parse, errors(), repair, value semantics."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outrider import ContractError, ExploreResult, VerificationResult

OK = '{"status": "completed", "summary": "Found it", "findings": ["a"], "evidence": ["src/a.py:1"]}'


def errors_of(
    text: Any, cls: type[ExploreResult] | type[VerificationResult] = ExploreResult
) -> tuple[str, list[Any]]:
    with pytest.raises(ContractError) as info:
        cls.from_json(text)
    return str(info.value), info.value.errors()


def test_accepts_and_normalises_like_the_reference() -> None:
    raw = '\n  {"status": "COMPLETED", "summary": "  Auth is in src/auth.py \\n", "findings": ["x", "   ", " y "], "evidence": null, "unresolved_questions": [], "extra": {"k": [1, 2]}, "status": "Partial"}\t'
    r = ExploreResult.from_json(raw, tool_usage={"Grep": 2, "Read": 1}, terminal_reason="completed")
    assert r.to_dict() == {
        "status": "partial",  # duplicate key: the last one wins, as in Python's json
        "summary": "Auth is in src/auth.py",
        "findings": ["x", " y "],  # blank items dropped, kept items not stripped
        "evidence": [],
        "unresolved_questions": [],
        "tool_usage": {"Grep": 2, "Read": 1},
        "terminal_reason": "completed",
    }
    assert (r.findings, r.evidence) == (("x", " y "), ())


def test_python_json_leniencies_are_accepted() -> None:
    r = ExploreResult.from_json(
        '{"status": "partial", "summary": "s", "score": NaN, "max": Infinity}'
    )
    assert r.status == "partial"
    assert (
        ExploreResult.from_json(
            None.__class__.__name__ and '{"status":"completed","summary":"s"}'
        ).summary
        == "s"
    )


@pytest.mark.parametrize(
    ("text", "message", "errors"),
    [
        (
            '```json\n{"status": "completed", "summary": "s"}\n```',
            "structured child result must not use markdown fences",
            [
                {
                    "type": "markdown_fence",
                    "loc": (),
                    "msg": "structured child result must not use markdown fences",
                    "input": '```json\n{"status": "completed", "summary": "s"}\n```',
                }
            ],
        ),
        (
            "",
            "Expecting value: line 1 column 1 (char 0)",
            [
                {
                    "type": "json_invalid",
                    "loc": (),
                    "msg": "Expecting value: line 1 column 1 (char 0)",
                    "input": "",
                }
            ],
        ),
        (
            None,
            "Expecting value: line 1 column 1 (char 0)",
            [
                {
                    "type": "json_invalid",
                    "loc": (),
                    "msg": "Expecting value: line 1 column 1 (char 0)",
                    "input": "",
                }
            ],
        ),
        (
            'Here: {"status": "completed", "summary": "s"}',
            "Expecting value: line 1 column 1 (char 0)",
            [
                {
                    "type": "json_invalid",
                    "loc": (),
                    "msg": "Expecting value: line 1 column 1 (char 0)",
                    "input": 'Here: {"status": "completed", "summary": "s"}',
                }
            ],
        ),
        (
            '{"status": "completed", "summary": "s"} thanks',
            "Extra data: line 1 column 41 (char 40)",
            [
                {
                    "type": "json_invalid",
                    "loc": (),
                    "msg": "Extra data: line 1 column 41 (char 40)",
                    "input": '{"status": "completed", "summary": "s"} thanks',
                }
            ],
        ),
        (
            '["a"]',
            "structured child result must be an object",
            [
                {
                    "type": "object_type",
                    "loc": (),
                    "msg": "structured child result must be an object",
                    "input": ["a"],
                }
            ],
        ),
        (
            '{"summary": "s"}',
            "status is missing; expected 'completed' or 'partial'",
            [
                {
                    "type": "status_invalid",
                    "loc": ("status",),
                    "msg": "status is missing; expected 'completed' or 'partial'",
                    "input": "",
                }
            ],
        ),
        (
            '{"status": "Done", "summary": "s"}',
            "'done' is not a valid SubagentStatus",
            [
                {
                    "type": "status_invalid",
                    "loc": ("status",),
                    "msg": "'done' is not a valid SubagentStatus",
                    "input": "Done",
                }
            ],
        ),
        (
            '{"status": 5, "summary": "s"}',
            "'5' is not a valid SubagentStatus",
            [
                {
                    "type": "status_invalid",
                    "loc": ("status",),
                    "msg": "'5' is not a valid SubagentStatus",
                    "input": 5,
                }
            ],
        ),
        (
            '{"status": "FAILED", "summary": "s"}',
            "ExploreResult status must be completed or partial",
            [
                {
                    "type": "status_not_allowed",
                    "loc": ("status",),
                    "msg": "ExploreResult status must be completed or partial",
                    "input": "FAILED",
                }
            ],
        ),
        (
            '{"status": "unverified", "summary": "s"}',
            "ExploreResult status must be completed or partial",
            [
                {
                    "type": "status_not_allowed",
                    "loc": ("status",),
                    "msg": "ExploreResult status must be completed or partial",
                    "input": "unverified",
                }
            ],
        ),
        (
            '{"status": "partial", "summary": " \\n "}',
            "ExploreResult requires summary",
            [
                {
                    "type": "summary_missing",
                    "loc": ("summary",),
                    "msg": "ExploreResult requires summary",
                    "input": " \n ",
                }
            ],
        ),
        (
            '{"status": "partial", "summary": 3}',
            "ExploreResult requires summary",
            [
                {
                    "type": "summary_missing",
                    "loc": ("summary",),
                    "msg": "ExploreResult requires summary",
                    "input": 3,
                }
            ],
        ),
        (
            '{"status": "partial"}',
            "ExploreResult requires summary",
            [
                {
                    "type": "summary_missing",
                    "loc": ("summary",),
                    "msg": "ExploreResult requires summary",
                    "input": None,
                }
            ],
        ),
        (
            '{"status": "partial", "summary": "s", "findings": "one"}',
            "result list fields must be string arrays",
            [
                {
                    "type": "string_array",
                    "loc": ("findings",),
                    "msg": "result list fields must be string arrays",
                    "input": "one",
                }
            ],
        ),
        (
            '{"status": "partial", "summary": "s", "evidence": ["a.py:1", 2, null]}',
            "result list fields must be string arrays",
            [
                {
                    "type": "string_array",
                    "loc": ("evidence", 1),
                    "msg": "result list fields must be string arrays",
                    "input": 2,
                },
                {
                    "type": "string_array",
                    "loc": ("evidence", 2),
                    "msg": "result list fields must be string arrays",
                    "input": None,
                },
            ],
        ),
        (
            '{"status": "nope", "findings": {}, "unresolved_questions": [[]]}',
            "'nope' is not a valid SubagentStatus",
            [
                {
                    "type": "status_invalid",
                    "loc": ("status",),
                    "msg": "'nope' is not a valid SubagentStatus",
                    "input": "nope",
                },
                {
                    "type": "summary_missing",
                    "loc": ("summary",),
                    "msg": "ExploreResult requires summary",
                    "input": None,
                },
                {
                    "type": "string_array",
                    "loc": ("findings",),
                    "msg": "result list fields must be string arrays",
                    "input": {},
                },
                {
                    "type": "string_array",
                    "loc": ("unresolved_questions", 0),
                    "msg": "result list fields must be string arrays",
                    "input": [],
                },
            ],
        ),
    ],
)
def test_explore_rejections_whole_errors(text: Any, message: str, errors: list[Any]) -> None:
    assert errors_of(text) == (message, errors)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"status": "completed", "summary": "s",}',
            "Expecting property name enclosed in double quotes: line 1 column 40 (char 39)",
        ),
        ('{"status" "completed"}', "Expecting ':' delimiter: line 1 column 11 (char 10)"),
        ('{"a": [1 2]}', "Expecting ',' delimiter: line 1 column 10 (char 9)"),
        ('{"a": "x', "Unterminated string starting at: line 1 column 7 (char 6)"),
        ('{"a": "\\q"}', "Invalid \\escape: line 1 column 8 (char 7)"),
        ('{\n"a": tru}', "Expecting value: line 2 column 6 (char 7)"),
        ('{"a": "tab\there"}', "Invalid control character at: line 1 column 11 (char 10)"),
    ],
)
def test_json_errors_use_pythons_wording(text: str, message: str) -> None:
    with pytest.raises(json.JSONDecodeError) as py_err:
        json.loads(text)
    assert str(py_err.value) == message  # the expectation is Python's own message
    assert errors_of(text)[0] == message


def test_verification_parse() -> None:
    for verdict in ["pass", "FAIL", "Partial", "unverified"]:
        r = VerificationResult.from_json(
            json.dumps({"verdict": verdict, "reasons": ["r", " "], "evidence": ["a.py:1"]}),
            child_session_id="child-1",
            child_run_id="run-1",
            terminal_reason="completed",
            tool_usage={"Read": 1},
            token_usage=120,
        )
        assert r.to_dict() == {
            "verdict": verdict.upper(),
            "reasons": ["r"],
            "findings": [],
            "evidence": ["a.py:1"],
            "child_session_id": "child-1",
            "child_run_id": "run-1",
            "terminal_reason": "completed",
            "tool_usage": {"Read": 1},
            "token_usage": 120,
        }
    assert errors_of('{"verdict": "bogus", "reasons": "x"}', VerificationResult) == (
        "'BOGUS' is not a valid VerificationVerdict",
        [
            {
                "type": "verdict_invalid",
                "loc": ("verdict",),
                "msg": "'BOGUS' is not a valid VerificationVerdict",
                "input": "bogus",
            },
            {
                "type": "string_array",
                "loc": ("reasons",),
                "msg": "result list fields must be string arrays",
                "input": "x",
            },
        ],
    )
    assert (
        errors_of("```\n{}", VerificationResult)[0]
        == "structured child result must not use markdown fences"
    )
    # No summary requirement for verification.
    assert VerificationResult.from_json('{"verdict": "PASS"}').terminal_reason == "unknown"


def test_repair_is_separate_and_reports_what_it_did() -> None:
    assert ExploreResult.repair(OK) == (ExploreResult.from_json(OK), None)
    fenced = f"Sure, here it is:\n```json\n{OK}\n```\nAnything else?"
    result, repair = ExploreResult.repair(fenced, terminal_reason="completed")
    assert (result.summary, result.terminal_reason, repair) == ("Found it", "completed", "fence")
    result, repair = ExploreResult.repair(f"The answer is {OK}. Done {{not json}}.")
    assert (result.evidence, repair) == (("src/a.py:1",), "extract")
    # Code quoted inside a string with its quotes unescaped, as a small model writes it.
    quoted = (
        '```json\n{"status": "completed", "summary": "Served by Static.", "findings": [],'
        ' "evidence": ["src/a.py:1: app.static("/static", "/var/www")"]}\n```'
    )
    result, repair = ExploreResult.repair(quoted)
    assert (result.evidence, repair) == (
        ('src/a.py:1: app.static("/static", "/var/www")',),
        "quotes",
    )
    # A list ended with a comma, as a small model writes it.
    trailing = (
        '```json\n{"status": "completed", "summary": "s", "evidence": ["src/a.py:1",\n]}\n```'
    )
    result, repair = ExploreResult.repair(trailing)
    assert (result.evidence, repair) == (("src/a.py:1",), "commas")
    # A findings list not closed before the next key (what a 1.5B model wrote on chi).
    left_open = (
        '```json\n{"status": "completed", "summary": "s", "findings": ["Mount shifts the path.",'
        '\n  "evidence": ["mux.go:318-327"],\n  "unresolved_questions": []\n}\n```'
    )
    result, repair = ExploreResult.repair(left_open)
    assert (result.findings, result.evidence, repair) == (
        ("Mount shifts the path.",),
        ("mux.go:318-327",),
        "brackets",
    )
    with pytest.raises(
        ContractError, match="^the JSON in the answer's code fence does not parse: "
    ):
        ExploreResult.repair('```json\n{"status": "completed",, }\n```')
    with pytest.raises(
        ContractError, match="^structured child result must not use markdown fences$"
    ):
        ExploreResult.from_json(fenced.removeprefix("Sure, here it is:\n"))
    with pytest.raises(ContractError) as info:
        ExploreResult.repair(f"{OK}\n{OK}")
    assert info.value.errors()[0]["type"] == "ambiguous"
    with pytest.raises(ContractError) as info:
        ExploreResult.repair("I could not find anything.")
    assert info.value.errors() == [
        {
            "type": "json_invalid",
            "loc": (),
            "msg": "Expecting value: line 1 column 1 (char 0)",
            "input": "I could not find anything.",
        }
    ]
    with pytest.raises(ContractError, match="^ExploreResult requires summary$"):
        ExploreResult.repair('Result: {"status": "partial"}')
    verdict, repair = VerificationResult.repair('```\n{"verdict": "fail"}\n```')
    assert (verdict.verdict, repair) == ("FAIL", "fence")


def test_bad_input_types_and_bytes() -> None:
    with pytest.raises(
        TypeError,
        match="ExploreResult text: must be str or bytes, got int",
    ):
        ExploreResult.from_json(5)  # type: ignore[arg-type]
    assert ExploreResult.from_json(OK.encode()).summary == "Found it"
    msg, errors = errors_of(b'{"status": "completed", "summary": "\xff\xfe"}')
    assert msg == "structured child result is not valid UTF-8: invalid byte at offset 36"
    assert errors[0]["type"] == "utf8_invalid"
    with pytest.raises(
        TypeError, match=r"tool_usage: must be a dict of tool name to call count, got list"
    ):
        ExploreResult.from_json(OK, tool_usage=[("Read", 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tool_usage\['Read'\]: must be int, got str"):
        ExploreResult.from_json(OK, tool_usage={"Read": "1"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"tool_usage\['Read'\]: must be >= 0, got -1"):
        ExploreResult.from_json(OK, tool_usage={"Read": -1})
    with pytest.raises(TypeError):
        ExploreResult.from_json(OK, terminal_reason=3)  # type: ignore[arg-type]


def test_huge_and_deep_answers_fail_cleanly() -> None:
    huge = json.dumps(
        {"status": "completed", "summary": "x" * 5_000_000, "findings": ["f"] * 100_000}
    )
    assert len(ExploreResult.from_json(huge).findings) == 100_000
    msg, _ = errors_of("[" * 100_000)
    assert msg.startswith("Maximum nesting depth exceeded: line 1 column")
    msg, _ = errors_of('{"status": "completed", "summary": "s", "evidence": [' + '"x",' * 10 + "]}")
    assert msg.startswith("Expecting value")


def test_value_semantics() -> None:
    a = ExploreResult.from_json(OK, tool_usage={"Read": 1}, terminal_reason="completed")
    b = ExploreResult.from_json(OK, tool_usage={"Read": 1}, terminal_reason="completed")
    assert a == b and hash(a) == hash(b)
    assert a != ExploreResult.from_json(OK)
    assert a != OK
    with pytest.raises(AttributeError):
        a.summary = "x"  # type: ignore[misc]
    usage = a.tool_usage
    usage["Read"] = 99
    assert a.tool_usage == {"Read": 1}  # getters hand out copies
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.copy(a) is a and copy.deepcopy(a) is a
    assert ExploreResult.from_dict(a.to_dict()) == a
    assert json.loads(json.dumps(a.to_dict())) == a.to_dict()
    assert repr(a) == (
        "ExploreResult(status='completed', summary='Found it', findings=('a',), evidence=('src/a.py:1',), "
        "unresolved_questions=(), tool_usage={'Read': 1}, terminal_reason='completed')"
    )
    long = ExploreResult("partial", "y" * 500)
    assert len(repr(long)) < 250 and "…" in repr(long)
    v = VerificationResult.from_json('{"verdict": "PASS"}', token_usage=5)
    assert pickle.loads(pickle.dumps(v)) == v
    assert VerificationResult.from_dict(v.to_dict()) == v


def test_constructor_and_from_dict_validate() -> None:
    r = ExploreResult("Completed", " s ", findings=("f",), tool_usage={"Grep": 1})
    assert r.to_dict() == {
        "status": "completed",
        "summary": "s",
        "findings": ["f"],
        "evidence": [],
        "unresolved_questions": [],
        "tool_usage": {"Grep": 1},
        "terminal_reason": "unknown",
    }
    with pytest.raises(ContractError) as info:
        ExploreResult.from_dict(
            {
                "status": "completed",
                "summary": "s",
                "tool_usage": {"Read": -2},
                "terminal_reason": 7,
            }
        )
    assert info.value.errors() == [
        {
            "type": "int_type",
            "loc": ("tool_usage", "Read"),
            "msg": "tool_usage counts must be non-negative integers",
            "input": -2,
        },
        {
            "type": "string_type",
            "loc": ("terminal_reason",),
            "msg": "terminal_reason must be a string",
            "input": 7,
        },
    ]
    with pytest.raises(TypeError, match="ExploreResult.from_dict data: must be a dict, got str"):
        ExploreResult.from_dict("{}")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"data\['findings'\]\[0\]: must be JSON values only"):
        ExploreResult.from_dict({"status": "completed", "summary": "s", "findings": [object()]})
    with pytest.raises(ContractError, match="^ExploreResult status must be completed or partial$"):
        ExploreResult("failed", "s")


def test_contract_error_pickles_and_copies_errors() -> None:
    with pytest.raises(ContractError) as info:
        ExploreResult.from_json("{}")
    err = info.value
    again = pickle.loads(pickle.dumps(err))
    assert (str(again), again.errors(), again.contract) == (str(err), err.errors(), "ExploreResult")
    err.errors().clear()
    assert len(err.errors()) == 2


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_any_input_gives_a_result_or_a_contract_error(text: str | bytes) -> None:
    for parse in (
        ExploreResult.from_json,
        ExploreResult.repair,
        VerificationResult.from_json,
        VerificationResult.repair,
    ):
        try:
            parse(text)
        except ContractError as err:
            assert err.errors(), "a ContractError always lists its violations"


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_json_reader_agrees_with_python(value: Any) -> None:
    text = json.dumps({"status": "completed", "summary": "s", "extra": value})
    assert ExploreResult.from_json(text).summary == "s"
