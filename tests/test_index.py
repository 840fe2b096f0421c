"""The code index through the Python API: the Search tool, the scout that uses it, and the cache
that keeps it warm outside the explored tree (issue #19)."""

from __future__ import annotations

import hashlib
import os
import pathlib
import time

import pytest

import outrider

SOURCES = {
    "src/auth/session.py": (
        "import hmac\n\n\n"
        "class SessionStore:\n"
        '    """Keeps sessions in signed cookies."""\n\n'
        "    def save(self, response, session):\n"
        "        token = hmac.new(self.key, session.encode()).hexdigest()\n"
        "        response.set_cookie('session', token)\n"
    ),
    "src/app.py": "from auth.session import SessionStore\n\n\ndef main():\n    return SessionStore()\n",
    "tests/test_session.py": "def test_save():\n    SessionStore().save(None, '')\n",
    "docs/sessions.md": "# Sessions\nSessions are saved in cookies.\n",
}


def make_tree(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def digest(root: pathlib.Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("OUTRIDER_CACHE_DIR", str(d))
    return d


def test_search_ranks_the_definition_first_and_shows_its_line(
    tmp_path: pathlib.Path, cache: pathlib.Path
) -> None:
    root = make_tree(tmp_path / "repo", SOURCES)
    env = outrider.run_tool(root, "Search", {"query": "where is the session cookie saved?"})
    assert env["status"] == "success", env
    first = env["data"]["hits"][0]
    assert (first["file"], first["start"], first["kind"], first["name"]) == (
        "src/auth/session.py",
        7,
        "method",
        "save",
    )
    assert first["lines"][0] == {"line": 7, "text": "    def save(self, response, session):"}
    files = [h["file"] for h in env["data"]["hits"]]
    assert files.index("src/auth/session.py") < files.index("tests/test_session.py")


def test_bad_search_arguments_are_named(tmp_path: pathlib.Path, cache: pathlib.Path) -> None:
    root = make_tree(tmp_path / "repo", SOURCES)
    env = outrider.run_tool(root, "Search", {"query": "x", "limit": 500})
    assert env["status"] == "error"
    assert "limit must be an integer from 1 to 30, got 500" in env["error"]["message"]


def test_the_index_is_cached_outside_the_tree_and_updated_for_changed_files(
    tmp_path: pathlib.Path, cache: pathlib.Path
) -> None:
    root = make_tree(tmp_path / "repo", SOURCES)
    # Files written long ago (a file written in the last seconds is read again by the next
    # walk, in case it is rewritten within one tick of the filesystem's clock).
    for p in root.rglob("*.*"):
        os.utime(p, (time.time() - 3600, time.time() - 3600))
    before = digest(root)
    first = outrider.run_tool(root, "Search", {"query": "SessionStore"})
    assert first["stats"]["files_read"] == 4, first["stats"]
    # Cached on disk, privately, and nothing written inside the tree.
    stored = list((cache / "index").glob("*.idx"))
    assert len(stored) == 1
    assert stored[0].stat().st_mode & 0o077 == 0
    assert digest(root) == before
    again = outrider.run_tool(root, "Search", {"query": "SessionStore"})
    assert again["stats"]["files_read"] == 0
    assert "memory" in again["text"]
    # A changed file is read again; the others are not.
    time.sleep(0.01)
    (root / "src/app.py").write_text("def launch_rockets():\n    return 1\n")
    changed = outrider.run_tool(root, "Search", {"query": "launch_rockets"})
    assert changed["stats"]["files_read"] == 1
    assert changed["data"]["hits"][0]["name"] == "launch_rockets"


def test_a_cache_dir_inside_the_tree_is_never_written(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "repo", SOURCES)
    monkeypatch.setenv("OUTRIDER_CACHE_DIR", str(root / ".cache"))
    before = digest(root)
    env = outrider.run_tool(root, "Search", {"query": "SessionStore"})
    assert env["status"] == "success"
    assert digest(root) == before
    assert not (root / ".cache").exists()


def test_the_scout_answers_from_the_index_and_cites_only_what_it_saw(
    tmp_path: pathlib.Path, cache: pathlib.Path
) -> None:
    root = make_tree(tmp_path / "repo", SOURCES)
    before = digest(root)
    launcher = outrider.SubagentLauncher(root, outrider.OfflineScout(), trace_dir=False)
    result = launcher.launch(outrider.SubagentRequest(task="Where is the session cookie saved?"))
    assert result.status == "completed", result.explore
    assert result.explore.evidence[0] == "src/auth/session.py:7-9"
    assert result.tool_usage.get("Search") == 1
    assert not result.ungrounded_evidence
    assert digest(root) == before
    # A second question on the same tree reuses the index (no file read again).
    again = launcher.launch(outrider.SubagentRequest(task="Where is main defined?"))
    assert again.explore.evidence[0].startswith("src/app.py:4")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_links_out_of_the_tree_are_not_indexed(tmp_path: pathlib.Path, cache: pathlib.Path) -> None:
    outside = make_tree(
        tmp_path / "outside", {"secret.py": "def leaked_secret_function():\n    pass\n"}
    )
    root = make_tree(tmp_path / "repo", SOURCES)
    os.symlink(outside, root / "linked_dir")
    os.symlink(outside / "secret.py", root / "linked.py")
    env = outrider.run_tool(root, "Search", {"query": "leaked_secret_function"})
    assert all("leaked" not in str(h) for h in env["data"]["hits"]), env


def test_a_profile_may_offer_search_to_a_model_and_its_lines_count_as_seen(
    tmp_path: pathlib.Path, cache: pathlib.Path
) -> None:
    from outrider.testing import ScriptedLLM, call, final

    root = make_tree(tmp_path / "repo", SOURCES)
    profile = outrider.EXPLORE_PROFILE.replace(
        name="explore_search", tool_allowlist=["Read", "Grep", "Glob", "Search"]
    )
    llm = ScriptedLLM(
        [
            [call("Search", query="session cookie saved")],
            final(
                status="completed",
                summary="save() sets the cookie",
                findings=["SessionStore.save"],
                evidence=["src/auth/session.py:7"],
            ),
        ]
    )
    launcher = outrider.SubagentLauncher(root, llm, trace_dir=False, profiles=[profile])
    result = launcher.launch(
        outrider.SubagentRequest(task="Where is the cookie saved?", profile_name="explore_search")
    )
    assert result.status == "completed", result
    assert result.tool_usage == {"Search": 1}
    assert any(t["function"]["name"] == "Search" for t in llm.requests[0]["tools"])
    # The default explore profile does not offer it, and a call to it is denied.
    plain = ScriptedLLM(
        [
            [call("Search", query="x")],
            final(status="partial", summary="s", findings=["f"], evidence=[]),
        ]
    )
    outrider.SubagentLauncher(root, plain, trace_dir=False).launch(
        outrider.SubagentRequest(task="Where is main?")
    )
    assert all(t["function"]["name"] != "Search" for t in plain.requests[0]["tools"])
    assert "PERMISSION_DENIED" in str(plain.requests[1]["messages"][-1])


def test_profiles_refuse_tools_other_than_the_read_only_ones() -> None:
    with pytest.raises(outrider.ProfileError, match="Glob, Grep, Read and Search; got 'Bash2'"):
        outrider.EXPLORE_PROFILE.replace(name="x", tool_allowlist=["Read", "Bash2"])


# --- Hardening, round 4 (#36): a damaged cache, cache directories spelled into the root ------


def evict(tmp_path: pathlib.Path) -> None:
    """Search a few other trees so the next Search of any earlier one loads it from disk (a
    process keeps the indexes of its last few roots in memory)."""
    for i in range(5):
        other = make_tree(tmp_path / f"evict{i}", {"x.py": f"def other_{i}():\n    pass\n"})
        assert outrider.run_tool(other, "Search", {"query": f"other_{i}"})["status"] == "success"


def test_a_damaged_cache_is_rebuilt_and_never_makes_search_fail(
    tmp_path: pathlib.Path, cache: pathlib.Path
) -> None:
    root = make_tree(tmp_path / "repo", SOURCES)
    query = {"query": "where is the session cookie saved?"}
    first = outrider.run_tool(root, "Search", query)
    best = (first["data"]["hits"][0]["file"], first["data"]["hits"][0]["start"])
    (stored,) = (cache / "index").glob("*.idx")
    good = stored.read_bytes()
    # Each byte past the header set to the largest value its varint byte can hold: where it is a
    # term id or an offset, the cache still decodes but points past what it holds.
    step = max(1, len(good) // 40)
    for at in range(len(b"outrider-index-v4\n") + 1, len(good), step):
        damaged = bytearray(good)
        damaged[at] = 0x7F if damaged[at] < 0x80 else 0xFF
        stored.write_bytes(bytes(damaged))
        evict(tmp_path)
        env = outrider.run_tool(root, "Search", query)
        assert env["status"] == "success", (at, env.get("error"))
        hit = env["data"]["hits"][0]
        assert (hit["file"], hit["start"]) == best, (at, env["data"]["hits"])
    # The last damaged file was replaced by a good one: the next process loads it from disk.
    evict(tmp_path)
    again = outrider.run_tool(root, "Search", query)
    assert "disk" in again["text"], again["text"]


@pytest.mark.parametrize(
    "spelling",
    [
        "{base}/missing/../repo/.cache",
        "{base}/link/.cache",
        "{base}/link/src/not-yet/deeper",
        "{root}/src/../.cache",
        "{base}/outside-cache",
    ],
)
def test_a_cache_dir_spelled_into_the_tree_is_never_written(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    root = make_tree(tmp_path / "repo", SOURCES)
    os.symlink(root, tmp_path / "link")
    # An existing cache directory outside whose `index` folder links into the tree.
    (tmp_path / "outside-cache").mkdir()
    os.symlink(root / "src", tmp_path / "outside-cache" / "index")
    monkeypatch.setenv("OUTRIDER_CACHE_DIR", spelling.format(base=tmp_path, root=root))
    before = digest(root)
    env = outrider.run_tool(root, "Search", {"query": "SessionStore"})
    assert env["status"] == "success", env
    assert digest(root) == before
    assert not (root / ".cache").exists()
    assert not list(root.rglob("*.idx"))


def test_a_same_size_rewrite_in_the_same_clock_tick_is_not_served_stale(
    tmp_path: pathlib.Path, cache: pathlib.Path
) -> None:
    """A file rewritten with the same size and (as within one tick of the filesystem's clock)
    the same mtime between two Searches: the second Search must see the new text."""
    root = make_tree(tmp_path / "repo", {"a.py": "def alpha_function():\n    return 1\n"})
    path = root / "a.py"
    tick = time.time_ns()
    os.utime(path, ns=(tick, tick))
    first = outrider.run_tool(root, "Search", {"query": "alpha_function"})
    assert first["data"]["hits"][0]["name"] == "alpha_function"
    path.write_text("def gamma_function():\n    return 1\n")
    os.utime(path, ns=(tick, tick))
    again = outrider.run_tool(root, "Search", {"query": "gamma_function"})
    hits = again["data"]["hits"]
    assert hits and hits[0].get("name") == "gamma_function", again
    gone = outrider.run_tool(root, "Search", {"query": "alpha_function"})
    assert all(h.get("name") != "alpha_function" for h in gone["data"]["hits"]), gone


@pytest.mark.parametrize("bad", ["abc", "0", "-1"])
def test_a_bad_cache_bound_is_named_once_not_at_every_search(
    tmp_path: pathlib.Path,
    cache: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    bad: str,
) -> None:
    value = f"{bad} {tmp_path.name}"  # a value no earlier test set: its warning is not spent
    monkeypatch.setenv("OUTRIDER_CACHE_MAX_MB", value)
    caplog.set_level("WARNING", logger="outrider")
    for i in range(3):
        root = make_tree(tmp_path / f"repo{i}", SOURCES)
        assert outrider.run_tool(root, "Search", {"query": "SessionStore"})["status"] == "success"
    named = [r for r in caplog.records if "OUTRIDER_CACHE_MAX_MB" in r.getMessage()]
    assert len(named) == 1, [r.getMessage() for r in named]
    assert value in named[0].getMessage()


def test_a_cache_bound_too_big_for_64_bits_is_no_bound_and_no_warning(
    tmp_path: pathlib.Path,
    cache: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("OUTRIDER_CACHE_MAX_MB", "99999999999999999999999")
    caplog.set_level("WARNING", logger="outrider")
    root = make_tree(tmp_path / "repo", SOURCES)
    assert outrider.run_tool(root, "Search", {"query": "SessionStore"})["status"] == "success"
    assert list((cache / "index").glob("*.idx"))
    assert not [r for r in caplog.records if "OUTRIDER_CACHE_MAX_MB" in r.getMessage()]


def _inotify_watches() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "inotify" in os.readlink(f"/proc/self/fd/{fd}"):
                with open(f"/proc/self/fdinfo/{fd}") as info:
                    n += sum(1 for line in info if line.startswith("inotify wd:"))
        except OSError:
            pass
    return n


@pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="inotify is Linux's")
def test_a_tree_of_very_many_directories_takes_no_watches_and_stays_fresh(
    tmp_path: pathlib.Path, cache: pathlib.Path
) -> None:
    """Watches are the user's, shared with every program (8192 on older kernels): a tree with
    more directories than one tree may watch (16,384) is walked at every Search instead."""
    root = tmp_path / "repo"
    for i in range(17_000):
        (root / f"a{i // 200}" / f"b{i}").mkdir(parents=True)
    (root / "a0/b0/x.py").write_text("def the_only_function():\n    pass\n")
    before = _inotify_watches()
    first = outrider.run_tool(root, "Search", {"query": "the_only_function"})
    assert first["data"]["hits"][0]["name"] == "the_only_function"
    assert _inotify_watches() <= before  # (an older warm tree may have been let go)
    (root / "a0/b0/x.py").write_text("def the_other_function():\n    pass\n")
    again = outrider.run_tool(root, "Search", {"query": "the_other_function"})
    assert again["data"]["hits"][0]["name"] == "the_other_function"
