"""A private asyncio loop on a daemon thread, where outrider awaits async model callables.

A synchronous ``launch()`` may be called from inside a running event loop (Jupyter), which it
then blocks; coroutines from async callables therefore run here, not on the caller's loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="outrider-asyncio", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on the background loop and wait for its result (from a non-loop thread)."""
    return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result()


def resolve(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    """Complete ``future`` from another thread's callback, unless it was cancelled meanwhile."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
