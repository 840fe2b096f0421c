"""The README's Python examples run, each on its own, as written (#20.4).

Each ```python block runs in a fresh interpreter, in a directory holding a small repository at
``path/to/repo``, against a loopback OpenAI-compatible model (``OPENAI_BASE_URL``, ``LLM_*``)
that explores as a model would: it Reads ``src/auth.py`` and answers citing a line it saw, and as
a main agent delegates to a Task child first. A block with ``def test_`` runs under pytest; a
block that awaits at top level must follow text that says "in a notebook" and runs as a
notebook cell does. A block marked ``<!-- readme: no-run (why) -->`` (it needs the network) is
only type-checked (tools/readme_examples.py, in ``make lint``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from loopback import _serve

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
NO_RUN = "<!-- readme: no-run"


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_examples", ROOT / "tools" / "readme_examples.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_examples"] = module
    spec.loader.exec_module(module)
    return module


TOOL = tool()
BLOCKS: list[tuple[int, str]] = TOOL.blocks(README)

REPO = {
    "src/auth.py": (
        "def login(user):\n"
        "    return create_session_token(user)\n"
        "\n\n"
        "def create_session_token(user):\n"
        '    return "token-" + user\n'
    ),
    "src/db.py": "def open_db(path):\n    return path\n",
    "main.py": "def main():\n    pass\n",
}


class ExploringModel:
    """Answers chat completions as a model exploring REPO would; counts the calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        with self.lock:
            self.calls += 1
        request = json.loads(raw)
        messages = request.get("messages") or []
        tools = {t["function"]["name"] for t in request.get("tools") or []}
        system = str(messages[0].get("content") or "") if messages else ""
        seen = any(m.get("role") == "tool" for m in messages)
        message: dict[str, Any]
        if "Task" in tools:
            if seen:
                message = {"content": "login() calls create_session_token() (src/auth.py:1)."}
            else:
                task = str(messages[-1].get("content") or "").split("\n")[0]
                args = {"description": "Explore", "prompt": task, "subagent_type": "explore"}
                message = {"tool_calls": [tool_call("Task", args)]}
        elif tools and not seen:
            message = {"tool_calls": [tool_call("Read", {"path": "src/auth.py"})]}
        elif system.startswith("You are a Verification agent"):
            verdict = {
                "verdict": "PASS",
                "reasons": ["login() exists"],
                "evidence": ["src/auth.py:1"],
            }
            message = {"content": json.dumps(verdict)}
        else:
            answer = {
                "status": "completed",
                "summary": "The session token is created by create_session_token in src/auth.py.",
                "findings": ["login() calls create_session_token()"],
                "evidence": ["src/auth.py:1", "src/auth.py:5"],
            }
            message = {"content": json.dumps(answer)}
        body = {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model") or "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, **message},
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        return 200, json.dumps(body).encode()


def tool_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[str, ExploringModel]]:
    state = ExploringModel()
    with _serve(state.answer, keep_alive=True) as root:
        yield f"{root}/v1", state


NOTEBOOK_CELL = """
import ast, asyncio, sys
code = compile(open(sys.argv[1]).read(), sys.argv[1], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
async def cell():
    out = eval(code, {"__name__": "__main__"})
    if out is not None:
        await out
asyncio.run(cell())
"""


def run_block(
    line: int, code: str, base: str, tmp: pathlib.Path
) -> subprocess.CompletedProcess[str]:
    for rel, text in REPO.items():
        target = tmp / "path" / "to" / "repo" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": base,
        "ANTHROPIC_API_KEY": "test-key",
        "LLM_MODEL_ID": "loopback-model",
        "LLM_API_KEY": "test-key",
        "LLM_BASE_URL": base,
        "OUTRIDER_TRACE_DIR": str(tmp / "traces"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    if "def test_" in code:
        path = tmp / f"test_readme_block_{line}.py"
        path.write_text(code)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
    elif TOOL.awaits_at_top_level(code):
        path = tmp / f"readme_block_{line}.py"
        path.write_text(code)
        command = [sys.executable, "-c", NOTEBOOK_CELL, str(path)]
    else:
        path = tmp / f"readme_block_{line}.py"
        path.write_text(code)
        command = [sys.executable, str(path)]
    return subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
def test_each_python_block_runs_on_its_own(
    line: int, code: str, model: tuple[str, ExploringModel], tmp_path: pathlib.Path
) -> None:
    intro = TOOL.intro(README, line)
    if NO_RUN in intro.splitlines()[-1] if intro.strip() else False:
        pytest.skip(intro.splitlines()[-1])
    if TOOL.awaits_at_top_level(code):
        assert "in a notebook" in intro.lower(), "top-level await only where the text says so"
    base, state = model
    before = state.calls
    out = run_block(line, code, base, tmp_path)
    assert out.returncode == 0, f"README.md:{line}\n{out.stdout}\n{out.stderr}"
    if TOOL.awaits_at_top_level(code):  # the notebook cell launches a child through the model
        assert state.calls > before, "the block ran no model call"


def test_every_python_block_is_extracted_into_its_own_compilable_module() -> None:
    found = TOOL.modules(README)
    assert len(found) == README.count("```python") == len(BLOCKS) and len(found) >= 3
    for (name, code), (line, block) in zip(found, BLOCKS, strict=True):
        assert name == f"readme_block_{line}.py"
        compile(code, name, "exec")
        assert f"# README.md:{line}\n" in code
        assert README.splitlines()[line - 1] == block.splitlines()[0]


def test_the_quick_start_runs_children_through_the_model(
    model: tuple[str, ExploringModel], tmp_path: pathlib.Path
) -> None:
    line, code = next((n, c) for n, c in BLOCKS if "def my_llm" in c and "client" in c)
    out = run_block(line, code, model[0], tmp_path)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("completed gpt-4.1-mini The session token is created"), out.stdout
    assert "login() calls create_session_token()" in out.stdout
    assert "['completed']" in out.stdout
