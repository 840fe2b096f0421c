"""From async code: an async model callable, launch_async, and children running concurrently.

python examples/async_launch.py
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import tempfile
from typing import Any

import outrider

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = {
    "package": "python/outrider/__init__.py",
    "core": "src/lib.rs",
    "tests": "tests/conftest.py",
}


async def model(request: dict[str, Any]) -> dict[str, Any]:
    """An async model (as an async SDK client would be): Read the file the task names, then
    answer. It answers from the request alone, so concurrent children cannot mix up turns."""
    await asyncio.sleep(0.05)  # a network round trip
    task = next(m["content"] for m in request["messages"] if m["role"] == "user")
    topic = next(t for t in FILES if t in task)
    if not any(m["role"] == "tool" for m in request["messages"]):
        return {"tool_calls": [{"name": "Read", "arguments": {"path": FILES[topic], "limit": 5}}]}
    answer = {
        "status": "completed",
        "summary": f"The {topic} starts in {FILES[topic]}.",
        "evidence": [f"{FILES[topic]}:1"],
    }
    return {"content": json.dumps(answer)}


async def main() -> None:
    with tempfile.TemporaryDirectory() as traces:
        launcher = outrider.SubagentLauncher(ROOT, model, model, trace_dir=traces)
        one = await launcher.launch_async(outrider.SubagentRequest(task="Where is the package?"))
        print(f"launch_async: {one.status}, tools {one.tool_usage}, {one.elapsed_ms} ms")

        loop = asyncio.get_running_loop()
        started = loop.time()
        results = await asyncio.gather(
            *(
                launcher.launch_async(outrider.SubagentRequest(task=f"Where is the {topic}?"))
                for topic in FILES
            )
        )
        print(f"{len(results)} children at once in {loop.time() - started:.2f} s:")
        for r in results:
            assert isinstance(r.result, outrider.ExploreResult)
            # What the model itself cited; the index's leads beside it are marked "index".
            own = [
                e
                for e, s in zip(r.result.evidence, r.result.evidence_sources, strict=True)
                if s != "index"
            ]
            print(f"  {r.status}: {r.result.summary}  {own}")


if __name__ == "__main__":
    asyncio.run(main())
