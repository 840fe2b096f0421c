"""How a Python model callable is called from the Rust loop, sync and async.

This module owns the Python half of every model call; ``src/py/model.rs`` (the Rust half) and
``src/host/callback.rs`` (the core's side) point here. One call, in order:

1. **Entry.** A launch starts from a blocking entry point (``launcher.launch``,
   ``agent.run``, ``task_tool.run``) or an async one (``launch_async``, ``run_async``, ...;
   ``async def`` methods, in :mod:`outrider._entry`). Both reach the native half
   (``_launch``, ``_launch_many``, ``_run``), which calls ``finish`` (``src/py/runtime.rs``):
   it records the **caller** (a copy of its ``contextvars`` context; for an async entry point
   its running event loop; for a blocking one called in a thread whose loop runs, a
   :class:`Blocked`) and runs the work on the core's tokio runtime. Blocking: with the GIL
   released, Ctrl-C heard. Async: the entry point awaits an asyncio future of the caller's
   loop, which :func:`resolve` completes from a runtime thread.
2. **The loop asks.** The runner's ReAct loop (``src/runner``) calls ``ChatModel::complete``
   of a ``CallbackModel`` (``src/host/callback.rs``): the request, serialised once as the
   OpenAI chat-completions JSON body, goes to the host's ``start`` with a ``Reply`` to answer
   through, and the loop's task awaits that reply (``spin_first``: briefly spinning first,
   since a quick callable answers within a millisecond).
3. **Into Python.** ``PyCallable::start`` (``src/py/model.rs``) takes the GIL and calls
   :func:`call` here with the callable, the body, the caller's context, event loop and
   :class:`Blocked`, the launcher's :class:`Home` and a native ``Done`` callback. :func:`call`
   returns a :class:`Handle`, the inbox of :class:`_Pool` and the job; the Rust side releases
   the GIL and only then puts the job in the inbox, so the model thread taking it does not
   wait for the GIL.
4. **The call.** On an ``outrider-model`` daemon thread the job runs ``fn(json.loads(body))``
   inside the caller's context copy. A plain value is converted (:func:`to_chat_response`, in
   ``_returns.py``) and reported at once. An awaitable goes to the launcher's :class:`Home`
   loop (the caller's loop when the first launch was async, else a private loop thread) with
   ``asyncio.run_coroutine_threadsafe``; its future reports when it ends. A coroutine that
   would need the loop a blocking launch is stalling is closed unrun and reported as a
   ``LaunchError`` (:class:`Blocked` raises it once the launch returns).
5. **The answer.** ``done(kind, payload)`` is called exactly once: ``("ok", json_text)``,
   ``("value", value)`` for an answer that is not plain JSON (the core converts or refuses
   it), ``("raised", (type, message, http_status))`` (:func:`_raised`: an SDK error's status
   and cause kept), or ``("unusable", (type, repr))``. ``Done`` sends the outcome through the
   ``Reply``; the loop's task wakes and turns it into a response or a ``ModelError`` naming
   the callable (``Outcome::into_response``).
6. **Abandon.** When the run stops first (cancel, timeout, Ctrl-C), the core drops the call
   and runs its abandon action, which calls :meth:`Handle.cancel`: a coroutine's future is
   cancelled; a sync call runs to its end and its report is ignored.

Threads and loops:

* Sync callables run on outrider's own daemon threads (pure Python threads: a thread with native
  frames on its stack must never be inside a user's call when the interpreter finalizes), with
  the caller's ``contextvars`` context.
* Coroutines run on one event loop per launcher (its :class:`Home`), so that a client bound to
  the loop it first ran on (``openai.AsyncOpenAI``'s connection pool) keeps working through
  ``launch()`` and then ``launch_async()``: the first loop they ran on, while it runs. That is the
  caller's running loop when the first launch came through an async entry point
  (``launch_async``, ``launch_many_async``, ``run_async``), so clients, locks and context bound to
  that loop work; otherwise (a sync ``launch()``, perhaps inside Jupyter's running loop) a private
  loop on a daemon thread. A sync launch from a thread whose running loop is the home (a
  notebook cell after an ``await`` cell) would stall it: that launch stops at its first model call
  and raises :class:`~outrider.LaunchError` saying what to do (:class:`Blocked`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import json
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from outrider import _core
from outrider._returns import to_chat_response

Done = Callable[[str, Any], None]

_IDLE_SECONDS = 30.0


class _Pool:
    """Daemon threads that run jobs; one more starts whenever none is idle.

    They wait in ``jobs.get`` without the GIL, the first of them spinning for a moment first:
    the next call of a running loop usually comes within a millisecond, and waking a sleeping
    thread would cost more than the call.
    """

    def __init__(self) -> None:
        self.jobs = _core._ModelInbox()
        self.lock = threading.Lock()
        self.idle = 0

    def reserve(self) -> _core._ModelInbox:
        """Promise the next job put into the returned inbox to an idle thread, or start one."""
        with self.lock:
            start = self.idle == 0
            if not start:
                self.idle -= 1
        if start:
            threading.Thread(target=self._work, name="outrider-model", daemon=True).start()
        return self.jobs

    def _work(self) -> None:
        while True:
            job = self.jobs.get(_IDLE_SECONDS)
            if job is None:
                with self.lock:
                    if self.idle > 0:
                        self.idle -= 1
                        return
                continue
            job()
            with self.lock:
                self.idle += 1


_pool = _Pool()
_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _after_fork() -> None:
    # The parent's threads do not exist in a forked child.
    global _pool, _loop, _loop_lock
    _pool, _loop, _loop_lock = _Pool(), None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def _private_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="outrider-asyncio", daemon=True).start()
            _loop = loop
        return _loop


def _running(loop: asyncio.AbstractEventLoop | None) -> bool:
    return loop is not None and not loop.is_closed() and loop.is_running()


class Home:
    """The event loop one launcher's (or main agent's) async model callables run on.

    Set by the first coroutine, to the caller's loop for an async entry point or to outrider's
    private loop for a sync one, and kept while that loop runs (a closed loop, as
    ``asyncio.run`` leaves it, is replaced by the next caller's)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def target(
        self, caller: asyncio.AbstractEventLoop | None, blocked: Blocked | None
    ) -> asyncio.AbstractEventLoop:
        """Where the next coroutine runs; raises :class:`_Conflict` when that is the loop a sync
        launch is blocking."""
        with self._lock:
            if not _running(self.loop):
                self.loop = caller if _running(caller) else _private_loop()
            loop = self.loop
        assert loop is not None
        if blocked is not None and loop is blocked.loop:
            raise _Conflict(blocked.refuse())
        return loop


class _Conflict(Exception):
    pass


class Blocked:
    """A sync entry point called in a thread whose event loop is running (and so stalled until
    it returns). Should the launch's coroutines belong on that loop, the entry point raises
    :class:`~outrider.LaunchError` with :attr:`conflict` once the work has stopped."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.conflict: str | None = None

    def refuse(self) -> str:
        self.conflict = (
            "this launcher's async model callable runs on the event loop of the calling thread "
            "(its first launch came through launch_async/run_async there), and a blocking "
            "launch()/run() stalls that loop; moving the call to another loop would break a "
            "client bound to it (openai.AsyncOpenAI's connections). Await the async form "
            "instead: `await launcher.launch_async(request)` (in a notebook, a cell with "
            "`await`), `await agent.run_async(task)`, `await task_tool.run_async(args)`; or call "
            "the blocking form from another thread (`await asyncio.to_thread(launcher.launch, "
            "request)`)"
        )
        return self.conflict

    def raise_conflict(self) -> None:
        """Raise the :class:`~outrider.LaunchError` a refused coroutine left, if any."""
        if self.conflict is not None:
            from outrider.exceptions import LaunchError

            raise LaunchError(self.conflict)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class Handle:
    """One model call in flight; ``cancel()`` stops a coroutine (a sync call cannot be stopped)."""

    def __init__(self) -> None:
        self.future: concurrent.futures.Future[Any] | None = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.future is not None:
            self.future.cancel()


def _raised(error: BaseException) -> tuple[str, str, int | None]:
    """An exception as the core takes it: type name, message, and the HTTP status an SDK error
    (openai/anthropic ``APIStatusError``, litellm's) carries."""
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    try:
        status = getattr(error, "status_code", None)
    except Exception:
        status = None
    try:
        message = _with_cause(error, message, status)
    except Exception:
        pass
    if not isinstance(status, int) or isinstance(status, bool) or not 0 <= status <= 0xFFFF:
        status = None
    return type(error).__name__, message, status


def _with_cause(error: BaseException, message: str, status: Any) -> str:
    """An SDK error's message with what it leaves out: the request it was about (an openai
    ``APIConnectionError`` says only "Connection error."), the HTTP status, and the underlying
    cause (``ConnectError: [Errno 111] Connection refused``)."""
    extra = []
    request = getattr(error, "request", None)
    url, method = getattr(request, "url", None), getattr(request, "method", None)
    if url is not None:
        extra.append(f"{method} {url}" if isinstance(method, str) else str(url))
    if isinstance(status, int) and str(status) not in message:
        extra.append(f"HTTP {status}")
    cause, seen = error.__cause__ or error.__context__, 0
    while cause is not None and seen < 5:
        if cause.__cause__ is None and cause.__context__ is None:
            break
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    if cause is not None:
        text = str(cause)
        if text and text not in message:
            extra.append(f"{type(cause).__name__}: {text}")
    return f"{message} ({'; '.join(extra)})" if extra else message


def _report(out: Any, done: Done) -> None:
    try:
        value = to_chat_response(out)
    except TypeError:
        try:
            shown = repr(out)
        except Exception:
            shown = "<unrepresentable>"
        done("unusable", (type(out).__qualname__, shown))
        return
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        done("value", value)  # the core converts it (NaN, sets, ...) or says what is wrong
        return
    done("ok", text)


def _finished(future: concurrent.futures.Future[Any], done: Done) -> None:
    try:
        if future.cancelled():
            done("raised", _raised(asyncio.CancelledError("the model call was cancelled")))
            return
        error = future.exception()
        if error is not None:
            done("raised", _raised(error))
        else:
            _report(future.result(), done)
    except BaseException as error:
        done("raised", _raised(error))


def call(
    fn: Callable[[dict[str, Any]], Any],
    request: str,
    context: contextvars.Context | None,
    loop: asyncio.AbstractEventLoop | None,
    blocked: Blocked | None,
    home: Home,
    done: Done,
) -> tuple[Handle, _core._ModelInbox, Callable[[], None]]:
    """Prepare ``fn(request)`` on a model thread: the core puts the returned job into the
    returned inbox; ``done`` is called exactly once with how it ended. ``loop`` is the caller's
    running loop (async entry points), ``blocked`` the loop a sync entry point stalls, ``home``
    where the callable's coroutines run."""
    handle = Handle()
    ctx = context.copy() if context is not None else contextvars.copy_context()

    def job() -> None:
        try:
            if handle.cancelled:
                done("raised", _raised(asyncio.CancelledError("the model call was cancelled")))
                return
            out = ctx.run(fn, json.loads(request))
            if inspect.isawaitable(out):
                try:
                    target = home.target(loop, blocked)
                except _Conflict as refused:
                    if inspect.iscoroutine(out):
                        out.close()  # never awaited, and so never warned about
                    done("raised", ("LaunchError", str(refused), None))
                    return
                coro: Coroutine[Any, Any, Any] = _await(out)
                future = ctx.run(asyncio.run_coroutine_threadsafe, coro, target)
                handle.future = future
                if handle.cancelled:
                    future.cancel()
                future.add_done_callback(lambda f: _finished(f, done))
                return
            _report(out, done)
        except BaseException as error:
            done("raised", _raised(error))

    # The core puts the job into the inbox once it has released the GIL, so that the thread
    # taking it does not wait for the GIL.
    return handle, _pool.reserve(), job


def resolve(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    """Complete ``future`` from another thread's callback, unless it was cancelled meanwhile."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def envelope_json(task: Any, envelope: Any) -> str:
    """A Task envelope as the parent model reads it: compact JSON, or the reference's (indent 2)
    when the tool was built with ``reference_format=True``; non-ASCII kept."""
    if getattr(task, "reference_format", False):
        return json.dumps(envelope, ensure_ascii=False, indent=2)
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
