"""The process around outrider: interpreter exit after async launches is clean."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, outrider
    launcher = outrider.SubagentLauncher(sys.argv[1], outrider.OfflineScout(), trace_dir=False)
    async def main():
        requests = [outrider.SubagentRequest(task="where is login") for _ in range(5)]
        results = await asyncio.gather(*(launcher.launch_async(r) for r in requests))
        print(results[0].status)
    asyncio.run(main())
    """
)


def _repo_and_script(
    tmp_path: pathlib.Path, name: str, text: str, files: dict[str, str] | None = None
) -> tuple[pathlib.Path, pathlib.Path]:
    """A small repository (`auth.py` with `login`, or `files`) and the script `text` beside it,
    written as `name`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for path, content in (files or {"auth.py": "def login(user):\n    return user\n"}).items():
        (repo / path).write_text(content)
    script = tmp_path / name
    script.write_text(text)
    return repo, script


def test_exit_after_async_launches_is_clean(tmp_path: pathlib.Path) -> None:
    # Runtime threads resolving the awaitables used to take the GIL while the interpreter
    # finalized: a segfault or abort in about 19 of 20 runs.
    repo, script = _repo_and_script(tmp_path, "exit_async.py", SCRIPT)
    codes = []
    for _ in range(10):
        proc = subprocess.run(
            [sys.executable, str(script), str(repo)], capture_output=True, text=True, timeout=60
        )
        codes.append((proc.returncode, proc.stderr[-300:]))
    assert codes == [(0, "")] * 10


def test_exploring_the_home_directory_keeps_traces_out_of_it(tmp_path: pathlib.Path) -> None:
    # The default trace directory lives under $HOME; exploring $HOME must not write into it.
    import os

    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.py").write_text("def login():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_", "XDG_"))}
    env.pop("OUTRIDER_TRACE_DIR", None)
    env["HOME"] = str(home)
    script = (
        "import sys, outrider\n"
        "r = outrider.SubagentLauncher(sys.argv[1]).launch(outrider.SubagentRequest(task='login'))\n"
        "print(r.trace_path)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(home)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    trace = proc.stdout.strip()
    assert trace != "None" and not trace.startswith(str(home)), trace
    assert sorted(p.name for p in home.rglob("*")) == ["notes.py"]


FORK_SCRIPT = textwrap.dedent(
    """
    import multiprocessing, os, sys, outrider
    from outrider.testing import ScriptedLLM, call
    FINAL = '{"status": "completed", "summary": "s", "evidence": ["a.py:1"]}'
    READ = [call("Read", path="a.py")]  # an honest child sees the line it cites
    root = sys.argv[1]

    def explore(_):
        launcher = outrider.SubagentLauncher(root, ScriptedLLM([READ, FINAL]), trace_dir=False)
        return launcher.launch(outrider.SubagentRequest(task="t")).status

    if __name__ == "__main__":
        llm = ScriptedLLM([READ, FINAL, READ, FINAL])
        launcher = outrider.SubagentLauncher(root, llm, trace_dir=False)
        assert launcher.launch(outrider.SubagentRequest(task="t")).status == "completed"
        pid = os.fork()
        if pid == 0:
            status = launcher.launch(outrider.SubagentRequest(task="t")).status
            os._exit(0 if status == "completed" else 1)
        _, code = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(code))
        with multiprocessing.get_context("fork").Pool(2) as pool:
            print("pool", pool.map(explore, range(4)))
    """
)


def test_a_forked_child_can_launch(tmp_path: pathlib.Path) -> None:
    # The runtime's threads do not exist after fork(): a child used to hang forever.
    repo, script = _repo_and_script(tmp_path, "fork.py", FORK_SCRIPT, {"a.py": "x = 1\n"})
    proc = subprocess.run(
        [sys.executable, str(script), str(repo)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "child 0",
        "pool ['completed', 'completed', 'completed', 'completed']",
    ]


ABANDONED = textwrap.dedent(
    """
    import sys, threading, time, outrider
    mode = sys.argv[2]
    quick = [outrider.EXPLORE_PROFILE.replace(timeout_seconds=0.2)]
    def slow(request):
        time.sleep(0.6)
        return "{}"
    class SlowFinalization:
        # Keeps finalization going while the abandoned call wakes up and wants the GIL back.
        def __del__(self):
            time.sleep(1.0)
    keep = SlowFinalization()
    launcher = outrider.SubagentLauncher(sys.argv[1], slow, profiles=quick, trace_dir=False)
    request = outrider.SubagentRequest(task="where is login")
    if mode == "abandoned":
        # The child times out while the sync call sleeps on; the interpreter then exits with
        # the call still in flight.
        r = launcher.launch(request)
        print(r.terminal_reason, r.failure_reason)
    else:
        # A launch still running on another thread when the interpreter exits.
        threading.Thread(target=launcher.launch, args=(request,), daemon=True).start()
        time.sleep(0.1)
        print("exiting")
    """
)


def test_exit_with_model_calls_in_flight_is_clean(tmp_path: pathlib.Path) -> None:
    # A sync model call left running on a thread with native frames aborted the interpreter at
    # exit ("FATAL: exception not rethrown") in a quarter to half of runs.
    repo, script = _repo_and_script(tmp_path, "abandoned.py", ABANDONED)
    outcomes = []
    for _batch in range(5):
        procs = [
            subprocess.Popen(
                [sys.executable, str(script), str(repo), mode],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for mode in ("abandoned", "running") * 2
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            outcomes.append((proc.returncode, out.strip(), err[-300:]))
    # A launch on a daemon thread checks for Ctrl-C every 50 ms; that check took the GIL after
    # the interpreter was gone (a segfault in about 1 of 100 runs of "running").
    # The timed-out child fails, or, when the index's search finished within its 20 ms share,
    # returns its leads as a partial answer (terminal reason "timeout"): either is a clean end.
    ended = {"runtime_error timeout", "timeout None"}
    assert [(code, out in ended or out, err) for code, out, err in outcomes[0::2]] == [
        (0, True, "")
    ] * 10
    assert outcomes[1::2] == [(0, "exiting", "")] * 10


LATE = textwrap.dedent(
    """
    import atexit, sys
    def late():
        r = launcher.launch(outrider.SubagentRequest(task="where is login"))
        print(r.status, r.error)
    # Registered before outrider is imported, so it runs after outrider's own exit hook.
    atexit.register(late)
    import outrider
    if sys.argv[2] == "scout":
        model = outrider.OfflineScout()
    else:
        model = lambda request: '{"status": "completed", "summary": "x"}'
    launcher = outrider.SubagentLauncher(sys.argv[1], model, trace_dir=False)
    """
)


def test_a_launch_from_a_late_exit_hook_ends(tmp_path: pathlib.Path) -> None:
    # The thread finalizing the interpreter may still launch: a model-free child completes, and a
    # model callable, which no outrider thread may run any more, fails saying why (not a hang).
    repo, script = _repo_and_script(tmp_path, "late.py", LATE)
    outcomes = []
    for mode in ("scout", "callable"):
        proc = subprocess.run(
            [sys.executable, str(script), str(repo), mode],
            capture_output=True,
            text=True,
            timeout=60,
        )
        outcomes.append((proc.returncode, proc.stdout.strip()))
    assert outcomes == [
        (0, "completed None"),
        (
            0,
            "failed child terminal reason: cancelled: "
            "cancelled error: the Python interpreter is exiting",
        ),
    ]
