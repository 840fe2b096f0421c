"""The sandbox: nothing outside the root is read or listed, nothing hangs, the tree is unchanged.

Every case runs a real tool through `outrider.run_tool` on a tree that has a secret file beside
the root, symlinks out of it (to files, directories, /proc and /dev), a symlink loop and a FIFO.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from loopback import answering

import outrider

SECRET = "TOPSECRET-7f3a"


def snapshot(root: pathlib.Path) -> dict[str, str]:
    """Every entry under root: its kind, and the hash of each regular file's bytes."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = pathlib.Path(dirpath) / name
            rel = str(p.relative_to(root))
            st = p.lstat()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() + f":{st.st_mode:o}"
            else:
                out[rel] = f"special:{st.st_mode:o}"
    return out


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    base = tmp_path_factory.mktemp("sandbox")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (base / "secret.txt").write_text(f"{SECRET}\n")
    root = base / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("def main():\n    return 'hello'\n")
    (root / "src" / "pkg" / "util.py").write_text("VALUE = 1\n")
    (root / "README.md").write_text("# demo\n")
    os.symlink(outside / "secret.txt", root / "link_file_out")
    os.symlink(outside, root / "link_dir_out")
    os.symlink("/etc/passwd", root / "link_passwd")
    os.symlink("/proc/self/environ", root / "link_proc")
    os.symlink("/dev/zero", root / "link_devzero")
    os.symlink("/dev/urandom", root / "src" / "link_urandom")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink("..", root / "src" / "pkg" / "up")  # a cycle inside the root
    os.symlink("../../..", root / "src" / "pkg" / "upup")  # the root's parent: outside
    os.mkfifo(root / "fifo")
    os.mkfifo(root / "src" / "fifo.py")
    os.symlink("fifo", root / "link_fifo")
    before = snapshot(root)
    yield root
    assert snapshot(root) == before, "the explored tree changed"


def run(root: pathlib.Path, name: str, args: Any) -> dict[str, Any]:
    result: dict[str, Any] = dict(outrider.run_tool(root, name, args))
    text = json.dumps(result)
    assert SECRET not in text, f"secret leaked through {name} {args!r}"
    assert "root:x:0:0" not in text, "passwd leaked"
    assert set(result) <= {"status", "data", "text", "stats", "context", "error"}
    return result


def code(result: dict[str, Any]) -> str | None:
    return result["error"]["code"] if result["status"] == "error" else None


READ_DENIED = [
    "../secret.txt",
    "../../../../../../etc/passwd",
    "/etc/passwd",
    "/proc/self/environ",
    "src/../../secret.txt",
    "./../secret.txt",
    "src/pkg/../../../outside/secret.txt",
    "link_file_out",
    "link_dir_out/secret.txt",
    "link_passwd",
    "link_proc",
    "link_devzero",
    "src/link_urandom",
    "src/pkg/upup/secret.txt",
    "src/pkg/upup/outside/secret.txt",
    "../" * 200 + "etc/passwd",
    "/" + "a/" * 100,
]


@pytest.mark.parametrize("path", READ_DENIED)
def test_read_outside_is_access_denied(sandbox: pathlib.Path, path: str) -> None:
    assert code(run(sandbox, "Read", {"path": path})) == "ACCESS_DENIED"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("fifo", "INVALID_PARAM"),
        ("src/fifo.py", "INVALID_PARAM"),
        ("link_fifo", "INVALID_PARAM"),
        ("loop_a", "INTERNAL_ERROR"),
        ("loop_b/x", "INTERNAL_ERROR"),
        ("", "INVALID_PARAM"),
        ("a\x00b", "INVALID_PARAM"),
        ("src/main.py\x00../../secret.txt", "INVALID_PARAM"),
        ("x" * 10_000, "INVALID_PARAM"),
        ("~/.bashrc", "NOT_FOUND"),
        ("$HOME/.bashrc", "NOT_FOUND"),
        ("file:///etc/passwd", "NOT_FOUND"),
        ("..\\secret.txt", "NOT_FOUND"),
        ("src", "IS_DIRECTORY"),
        ("src/pkg/up/main.py", None),
    ],
)
def test_read_odd_paths(sandbox: pathlib.Path, path: str, expected: str | None) -> None:
    assert code(run(sandbox, "Read", {"path": path})) == expected


@pytest.mark.parametrize(
    "args",
    [
        {"path": 123},
        {"path": ["src/main.py"]},
        {"path": None},
        {"path": {"p": 1}},
        {},
        {"path": "src/main.py", "start_line": 10**30},
        {"path": "src/main.py", "limit": "1e9"},
        {"path": "src/main.py", "limit": 2001},
        {"path": "src/main.py", "start_line": 0},
        {"path": "src/main.py", "start_line": 1.5},
    ],
)
def test_read_wrong_argument_types(sandbox: pathlib.Path, args: dict[str, Any]) -> None:
    assert code(run(sandbox, "Read", args)) == "INVALID_PARAM"


@pytest.mark.parametrize(
    "path",
    ["..", "../", "/", "/etc", "/proc", "/dev", "link_dir_out", "src/pkg/upup", "../outside"],
)
def test_grep_and_glob_roots_outside_are_denied(sandbox: pathlib.Path, path: str) -> None:
    assert code(run(sandbox, "Grep", {"pattern": "TOPSECRET", "path": path})) == "ACCESS_DENIED"
    assert code(run(sandbox, "Glob", {"path": path})) == "ACCESS_DENIED"
    assert code(run(sandbox, "Glob", {"path": path, "pattern": "**/*"})) == "ACCESS_DENIED"


@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "TOPSECRET"},
        {"pattern": "TOPSECRET", "include_hidden": True, "include_ignored": True},
        {"pattern": "TOPSECRET", "glob": "../**"},
        {"pattern": "TOPSECRET", "glob": "/**/*"},
        {"pattern": "TOPSECRET", "glob": "link_dir_out/**"},
        {"pattern": "root:x", "glob": "**/*"},
        {"pattern": ".", "path": "src"},
        {"pattern": "(a+)+$"},
        {"pattern": "x" * 20_000},
    ],
)
def test_grep_never_reads_outside_or_hangs(sandbox: pathlib.Path, args: dict[str, Any]) -> None:
    result = run(sandbox, "Grep", args)
    if result["status"] != "error":
        files = {m["file"] for m in result["data"].get("matches", [])}
        assert all(not f.startswith(("link_", "src/link_", "loop_", "src/pkg/up")) for f in files)


@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "["},
        {"pattern": ""},
        {"pattern": 5},
        {"pattern": "a", "limit": 0},
        {"pattern": "a", "limit": 201},
        {"pattern": "a", "limit": True},
        {"pattern": "a", "case_sensitive": "yes"},
        {"pattern": "a", "glob": 3},
        {"pattern": "a", "path": 7},
        {"pattern": "a", "path": "a\x00"},
    ],
)
def test_grep_bad_arguments(sandbox: pathlib.Path, args: dict[str, Any]) -> None:
    assert code(run(sandbox, "Grep", args)) == "INVALID_PARAM"


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"pattern": "**/*"},
        {"pattern": "**/*", "include_hidden": True, "include_ignored": True},
        {"pattern": "../*"},
        {"pattern": "../**/*"},
        {"pattern": "/etc/*"},
        {"pattern": "**/../../*"},
        {"pattern": "link_dir_out/*"},
        {"path": "src/pkg"},
    ],
)
def test_glob_never_lists_outside(sandbox: pathlib.Path, args: dict[str, Any]) -> None:
    result = run(sandbox, "Glob", args)
    assert result["status"] in ("success", "partial")
    for path in result["data"]["paths"]:
        assert not path.startswith(("/", "..")), path
        assert "secret" not in path and "passwd" not in path
        assert not path.startswith(("link_dir_out/", "src/pkg/up/", "src/pkg/upup/")), path


@pytest.mark.parametrize(
    "args",
    [
        {"pattern": 3},
        {"pattern": ""},
        {"limit": 0},
        {"limit": "3"},
        {"include_hidden": "no"},
        {"path": 5},
    ],
)
def test_glob_bad_arguments(sandbox: pathlib.Path, args: dict[str, Any]) -> None:
    assert code(run(sandbox, "Glob", args)) == "INVALID_PARAM"


@pytest.mark.parametrize(
    "name", ["Edit", "Bash", "Task", "Write", "read", "", "Read ", "mcp__fs__write"]
)
def test_non_read_only_and_unknown_tools_are_denied(sandbox: pathlib.Path, name: str) -> None:
    result = run(sandbox, name, {"path": "src/main.py", "command": "rm -rf /"})
    assert code(result) == "PERMISSION_DENIED"


def test_allowed_but_absent_tools_are_not_found(sandbox: pathlib.Path) -> None:
    # The reference classifies TodoWrite as allowed; a child has no such tool, so it is not found.
    assert code(run(sandbox, "TodoWrite", {"todos": []})) == "NOT_FOUND"


@pytest.mark.parametrize("args", ["not json", "[1, 2]", "42", '"str"', [1, 2], 3.5])
def test_malformed_arguments_are_error_envelopes(sandbox: pathlib.Path, args: Any) -> None:
    assert code(run(sandbox, "Read", args)) == "INVALID_PARAM"


def test_arguments_may_be_a_json_string(sandbox: pathlib.Path) -> None:
    result = run(sandbox, "Read", '{"path": "src/main.py"}')
    assert result["status"] == "success"
    assert "def main" in result["data"]["content"]


def test_nothing_is_written_into_the_root_even_for_huge_output(sandbox: pathlib.Path) -> None:
    big = sandbox.parent / "bigroot"
    big.mkdir(exist_ok=True)
    (big / "big.txt").write_text(("x" * 200 + "\n") * 2000)
    before = snapshot(big)
    result = run(big, "Read", {"path": "big.txt", "limit": 2000})
    assert result["data"]["truncated"] is True
    assert snapshot(big) == before


def test_tool_schemas_are_complete_in_both_formats() -> None:
    openai = outrider.tool_schemas()
    assert [t["function"]["name"] for t in openai] == ["Glob", "Grep", "Read"]
    for tool in openai:
        params = tool["function"]["parameters"]
        assert tool["type"] == "function" and tool["function"]["description"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert params["properties"], tool["function"]["name"]
        for spec in params["properties"].values():
            assert spec.get("type") and spec.get("description")
    grep = openai[1]["function"]["parameters"]
    assert grep["required"] == ["pattern"]
    assert grep["properties"]["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert grep["properties"]["limit"]["maximum"] == 200
    anthropic = outrider.tool_schemas("anthropic", names=["Read"])
    assert anthropic == [
        {
            "name": "Read",
            "description": openai[2]["function"]["description"],
            "input_schema": openai[2]["function"]["parameters"],
        }
    ]
    with pytest.raises(
        ValueError, match="unknown tool 'Bash'; the read-only tools are Glob, Grep, Read"
    ):
        outrider.tool_schemas(names=["Bash"])
    with pytest.raises(ValueError, match="format: must be 'openai' or 'anthropic', got 'xml'"):
        outrider.tool_schemas("xml")  # type: ignore[arg-type]


# --- Secrets never leave; traces never land in the root ----------------------------------------

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
AWS = "AKIAIOSFODNN7EXAMPLE"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7secret\n-----END RSA PRIVATE KEY-----\n"


def all_text(result: Any, traces: pathlib.Path) -> str:
    files = "".join(p.read_text() for p in sorted(traces.rglob("*.jsonl")))
    return f"{result!r} {json.dumps(result.to_dict())} {result.error} {files}"


def test_a_model_callable_raising_with_a_key_is_redacted_everywhere(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    traces = tmp_path / "traces"

    def model(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError(f"upstream refused key {KEY} (aws {AWS})")

    launcher = outrider.SubagentLauncher(
        root, model, trace_dir=traces, parent_trace=tmp_path / "parent.jsonl"
    )
    result = launcher.launch(outrider.SubagentRequest(task="find main"))
    assert result.status == "failed"
    assert "upstream refused key sk-*** (aws AKIA***)" in (result.error or "")
    text = all_text(result, tmp_path)
    assert KEY not in text and AWS not in text
    assert result.trace_error is None


def test_file_contents_with_credentials_are_redacted_in_traces(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "deploy.env").write_text(f"AWS_ACCESS_KEY_ID={AWS}\npassword=hunter2hunter2\n{PEM}")
    traces = tmp_path / "traces"
    from outrider.testing import ScriptedLLM, call, final

    llm = ScriptedLLM(
        [
            [call("Read", path="deploy.env")],
            final(
                status="completed",
                summary=f"deploy.env holds the key {AWS}",
                findings=[f"password=hunter2hunter2 on line 2; key {AWS}"],
                evidence=["deploy.env:1"],
            ),
        ]
    )
    result = outrider.SubagentLauncher(root, llm, trace_dir=traces).launch(
        outrider.SubagentRequest(task="read deploy.env")
    )
    assert result.trace_path is not None
    trace = pathlib.Path(result.trace_path).read_text()
    assert "deploy.env" in trace and "AKIA***" in trace
    for secret in (AWS, "hunter2hunter2", "MIIEowIBAAKCAQEA7secret"):
        assert secret not in trace
    # The answer names where the credential is, never its value.
    answer = result.result
    assert result.status == "completed" and isinstance(answer, outrider.ExploreResult)
    assert (answer.summary, answer.findings, answer.evidence) == (
        "deploy.env holds the key AKIA***",
        ("password=*** on line 2; key AKIA***",),
        ("deploy.env:1",),
    )


def test_the_configured_openai_key_never_appears(tmp_path: pathlib.Path) -> None:
    key = "plain-configured-key-not-shaped-0001"
    echo = {"error": {"message": f"Incorrect API key provided: {key}"}}
    with answering(401, echo) as base:
        llm = outrider.OpenAICompatible("m", base, key, max_retries=0)
        with pytest.raises(outrider.ModelError) as info:
            llm({"messages": [{"role": "user", "content": "hi"}]})
        assert info.value.kind == "auth" and key not in str(info.value)
        root = tmp_path / "root"
        root.mkdir()
        launcher = outrider.SubagentLauncher(root, llm, trace_dir=tmp_path / "traces")
        result = launcher.launch(outrider.SubagentRequest(task="find main"))
        assert result.status == "failed" and "[REDACTED]" in (result.error or "")
        assert key not in all_text(result, tmp_path) + repr(llm) + repr(launcher)


def test_trace_files_are_private_and_never_inside_the_root(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    from outrider.testing import ScriptedLLM

    llm = ScriptedLLM([])
    for spelled in (root / "t", out / "missing" / ".." / ".." / "root" / "t"):
        with pytest.raises(outrider.TraceDirError, match="inside the explored root"):
            outrider.SubagentLauncher(root, llm, trace_dir=spelled)
    with pytest.raises(outrider.ConfigError, match="parent_trace"):
        outrider.SubagentLauncher(root, llm, trace_dir=False, parent_trace=root / "parent.jsonl")
    monkeypatch.setenv("OUTRIDER_TRACE_DIR", str(root / "env-traces"))
    with pytest.raises(outrider.TraceDirError, match="inside the explored root"):
        outrider.SubagentLauncher(root, llm)
    assert sorted(os.listdir(root)) == []
    assert not (out / "missing").exists()

    monkeypatch.setenv("OUTRIDER_TRACE_DIR", str(out / "env-traces"))
    result = outrider.SubagentLauncher(root, llm).launch(outrider.SubagentRequest(task="t"))
    assert result.trace_path is not None and result.trace_error is None
    trace = pathlib.Path(result.trace_path)
    assert trace.parent == out / "env-traces"
    assert (trace.stat().st_mode & 0o777, trace.parent.stat().st_mode & 0o777) == (0o600, 0o700)
