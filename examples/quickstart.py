"""A first look at outrider: profiles, a strict result contract, and evidence checks."""

from __future__ import annotations

import pathlib

import outrider

root = pathlib.Path(__file__).resolve().parent.parent
print(f"outrider {outrider.__version__}")
print(outrider.EXPLORE_PROFILE)

answer = (
    '{"status": "completed", "summary": "The package entry point is python/outrider/__init__.py.",'
    ' "evidence": ["python/outrider/__init__.py:1", "python/outrider/__init__.py:9999"]}'
)
result = outrider.ExploreResult.from_json(answer, terminal_reason="completed")
print(result)
for check in outrider.check_evidence(root, result.evidence):
    mark = "ok " if check["grounded"] else "BAD"
    print(f"  {mark} {check['evidence']}  {check['message']}")

try:
    outrider.ExploreResult.from_json('```json\n{"status": "done"}\n```')
except outrider.ContractError as err:
    print(f"rejected: {err}")
fixed, repair = outrider.ExploreResult.repair(
    'Sure! ```json\n{"status": "partial", "summary": "Half done."}\n```'
)
print(f"repaired ({repair}): {fixed.summary}")
