"""Watching launches from Python: ``on_event`` delivery, the ``progress`` bar and ``stream()``.

The native core calls :func:`deliver` for each trace event on one of its worker threads, and
:func:`progress_bar` builds the bar ``launch_many(..., progress=True)`` ticks once per finished
child. Nothing here decides what an event is: the core sends trace events as they are written.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from outrider._core import _redact
from outrider.exceptions import MissingExtraError, install_hint

if TYPE_CHECKING:
    from outrider._core import SubagentLaunchResult, SubagentRequest
    from outrider._entry import SubagentLauncher

logger = logging.getLogger("outrider")


def deliver(
    callback: Callable[[dict[str, Any]], object], event: dict[str, Any], first: bool = True
) -> bool:
    """Hand one event to the caller's ``on_event``. An exception it raises is logged (a warning
    with the traceback the first time in a launch, at debug level after that), never raised, so
    that a broken callback does not stop a child. Returns whether the callback raised."""
    try:
        callback(event)
    except Exception as e:
        # The traceback is formatted here and redacted like every message of the core: the
        # exception text may hold a key (the record keeps no exc_info a handler could print).
        detail = _redact("".join(traceback.format_exception(e)).rstrip())
        if first:
            logger.warning(
                "on_event callback %s raised on event %r of session %s; the run goes on "
                "(further exceptions of this callback in this launch are logged at DEBUG)\n%s",
                _redact(repr(callback)),
                event.get("event"),
                event.get("session_id"),
                detail,
            )
        else:
            logger.debug(
                "on_event callback %s raised again on event %r of session %s\n%s",
                _redact(repr(callback)),
                event.get("event"),
                event.get("session_id"),
                detail,
            )
        return True
    return False


def progress_bar(total: int) -> Any:
    """A tqdm bar of ``total`` children, or a ConfigError naming ``progress`` without tqdm."""
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:
        # Worded as the ConfigError on the ``progress`` argument it was (and still is).
        raise MissingExtraError(
            "progress: True needs the tqdm package, which is not installed; "
            f"{install_hint('progress')}, or pass progress=False",
            "progress",
        ) from e
    return tqdm(total=total, desc="outrider", unit="child")


async def stream(
    launcher: SubagentLauncher, request: SubagentRequest
) -> AsyncIterator[dict[str, Any] | SubagentLaunchResult]:
    """Launch ``request`` and yield each trace event dict as it happens, then the result."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def on_event(event: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    launch = asyncio.ensure_future(launcher.launch_async(request, on_event=on_event))
    try:
        while True:
            next_event = asyncio.ensure_future(queue.get())
            await asyncio.wait({launch, next_event}, return_when=asyncio.FIRST_COMPLETED)
            if not next_event.done():
                next_event.cancel()
                break
            yield next_event.result()
        # The launch is over: events it sent before finishing are already queued (or on their
        # way through call_soon_threadsafe, which runs before the callbacks scheduled after it).
        await asyncio.sleep(0)
        while not queue.empty():
            yield queue.get_nowait()
        yield launch.result()
    finally:
        if not launch.done():
            launch.cancel()
