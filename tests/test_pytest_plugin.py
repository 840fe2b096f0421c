"""The pytest plugin, run in child pytest sessions with pytester."""

from __future__ import annotations

import pathlib
import sys

import pytest
from loopback import answering, completion

from outrider.testing import final

pytest_plugins = ["pytester"]

PROVIDER = final(status="completed", summary="from the provider", evidence=[])

CHILD_TESTS = """
import os, pathlib
import pytest
import outrider
from outrider.testing import ScriptedLLM, call, final

SCRIPTED = final(status="completed", summary="scripted", evidence=["a.py:1"])
READ = [call("Read", path="a.py")]  # an honest child sees the line it cites


def launch(root, llm=None, route=None):
    launcher = outrider.SubagentLauncher(root, llm)
    return launcher.launch(outrider.SubagentRequest(task="Where is x?", model_choice=route))


def test_light_env_is_ignored(tmp_repo, outrider_env):
    llm = ScriptedLLM([READ, SCRIPTED])
    r = launch(tmp_repo({"a.py": "x = 1\\n"}), llm)
    assert (r.model_used, r.explore.summary, llm.calls) == ("main", "scripted", 2)
    assert pathlib.Path(r.trace_path).parent == outrider_env.trace_dir
    assert "LIGHT_LLM_MODEL_ID" in outrider_env.removed and not os.path.exists(".env")


def test_dotenv_is_not_found(tmp_path):
    r = launch(tmp_path, route="main")
    assert r.model_used == "offline"


@pytest.mark.outrider_real_env
def test_opted_out_light_env_reaches_the_provider(tmp_repo):
    llm = ScriptedLLM([SCRIPTED])
    r = launch(tmp_repo({"a.py": "x = 1\\n"}), llm)
    assert (r.model_used, r.explore.summary, llm.calls) == ("light", "from the provider", 0)


@pytest.mark.outrider_real_env
def test_opted_out_dotenv_reaches_the_provider(tmp_path):
    r = launch(tmp_path, route="main")
    assert (r.model_used, r.explore.summary) == ("main", "from the provider")
"""

PLAIN_TESTS = """
import os

def test_untouched():
    assert os.environ.get("LIGHT_LLM_MODEL_ID") == "light-model"
    assert os.path.exists(".env")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # Load this tree's plugin explicitly, whatever the installed distribution registers.
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "outrider.pytest_plugin", *args
    )


@pytest.fixture
def provider_settings(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A loopback provider named by LIGHT_LLM_* in the environment and by LLM_* in .env."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONPATH", ":".join(p for p in sys.path if p))
    return pytester.path


def test_isolation_keeps_env_and_dotenv_from_routing_a_child(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, provider_settings: pathlib.Path
) -> None:
    with answering(200, completion(PROVIDER)) as url:
        monkeypatch.setenv("LIGHT_LLM_MODEL_ID", "light-model")
        monkeypatch.setenv("LIGHT_LLM_BASE_URL", url)
        monkeypatch.setenv("LIGHT_LLM_API_KEY", "sk-light")
        (provider_settings / ".env").write_text(
            f"LLM_MODEL_ID=main-model\nLLM_BASE_URL={url}\nLLM_API_KEY=sk-main\n"
        )
        pytester.makepyfile(test_child=CHILD_TESTS, test_plain=PLAIN_TESTS)
        result = run(pytester)
        result.assert_outcomes(passed=5)
        # `all` isolates the module that never imports outrider too.
        everything = run(pytester, "--outrider-isolation=all", "test_plain.py")
        everything.assert_outcomes(failed=1)
        # `off`: only a test asking for outrider_env is isolated.
        off = run(pytester, "--outrider-isolation=off", "-k", "dotenv_is_not_found or untouched")
        off.assert_outcomes(passed=1, failed=1)
        assert "test_dotenv_is_not_found" in "\n".join(off.outlines)


def test_a_bad_isolation_setting_is_refused(
    pytester: pytest.Pytester, provider_settings: pathlib.Path
) -> None:
    pytester.makeini("[pytest]\noutrider_isolation = sometimes\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*outrider_isolation: expected one of auto, all, off, got 'sometimes'*"]
    )


def test_fixtures(pytester: pytest.Pytester, provider_settings: pathlib.Path) -> None:
    pytester.makepyfile(
        test_fixtures="""
import pytest
from outrider.testing import call, final

def test_repo(tmp_repo, tmp_path):
    root = tmp_repo({"src/a.py": "x = 1\\n", "data.bin": b"\\x00\\x01", "empty/": ""}, gitignore=["build/", "*.log"])
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == [".gitignore", "data.bin", "empty", "src", "src/a.py"]
    assert (root / ".gitignore").read_text() == "build/\\n*.log\\n"
    assert (root / "data.bin").read_bytes() == b"\\x00\\x01"
    assert list(tmp_path.iterdir()) == [root]
    other = tmp_repo({}, name="other")
    assert other == tmp_path / "other"
    with pytest.raises(ValueError, match="file names must be relative paths inside the repository, got '../x'"):
        tmp_repo({"../x": ""}, name="bad")
    with pytest.raises(ValueError, match="'repo' was already built"):
        tmp_repo({})

def test_unused_steps_fail_a_passing_test(scripted_llm):
    scripted_llm(["never used"])

def test_unused_steps_allowed(scripted_llm):
    scripted_llm(["never used"], check_complete=False)
    assert scripted_llm({"t": ["x"]}, check_complete=False).remaining == 1

def test_failing_test_is_not_buried(scripted_llm):
    scripted_llm(["never used"])
    assert False, "the real failure"
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=3, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_unused_steps_fail_a_passing_test*",
            "E * ScriptedLLM has 1 unused step(s): ?'never used'?",
        ]
    )
    assert "the real failure" in result.stdout.str()
    assert "ERROR at teardown of test_failing_test_is_not_buried" not in result.stdout.str()


def test_the_entry_point_is_declared() -> None:
    tomllib = pytest.importorskip("tomllib")
    root = pathlib.Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"outrider": "outrider.pytest_plugin"}
