"""The attack suite: every case of ``attack_cases.CASES``, through ``run_tool`` and through a
whole scripted child, with the tree checked byte-for-byte after each (see attack_cases.py)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
from attack_cases import (
    CASES,
    SEARCH_CASES,
    Case,
    Outcome,
    Trees,
    run_child_case,
    run_tool_case,
    workspace,
)


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Trees, pathlib.Path]]:
    with workspace(tmp_path_factory.mktemp("attack")) as (trees, traces):
        yield trees, traces


def test_the_suite_is_large_and_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(CASES) >= 150, len(CASES)


def verdict(out: Outcome) -> None:
    assert not out.crashed, out.problems
    assert not out.escaped, out.problems
    assert not out.hung, out.problems
    assert out.problems == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_tool(arena: tuple[Trees, pathlib.Path], case: Case) -> None:
    verdict(run_tool_case(case, arena[0]))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_child(arena: tuple[Trees, pathlib.Path], case: Case) -> None:
    trees, traces = arena
    verdict(run_child_case(case, trees, traces))


@pytest.mark.parametrize("case", SEARCH_CASES, ids=lambda c: c.id)
def test_search(arena: tuple[Trees, pathlib.Path], case: Case) -> None:
    verdict(run_tool_case(case, arena[0]))
