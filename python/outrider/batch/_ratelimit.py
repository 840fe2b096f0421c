"""One rate limiter per provider, shared by every task of a batch (across Ray workers too).

Requests and tokens are paced with the generic cell rate algorithm: a call may start once the
provider's "theoretical arrival time" minus the burst allowance has passed, so in any window of
``w`` seconds at most ``burst + w * rate`` requests (and tokens, give or take one call's
tokens) are started. A call's tokens are estimated before it starts (its request's size plus an
answer allowance) and corrected with the usage the provider reports. A 429 pauses every task of
that provider for its ``Retry-After`` (or a doubling backoff when the answer carries none) and
the call is made again, up to ``max_retries`` times.

A wait longer than what is left of the task's time limit (its profile's ``timeout_seconds``,
from the start of its launch: :func:`task_deadline`) is not waited out: the call fails at once
as a 429, so the task ends as ``rate_limited`` rather than sleeping into a ``timeout``.

The limiter's state lives in one place: a lock in this process (:class:`LocalLimiter`), or a Ray
actor every worker asks for a start time (``_RayLimiter``); callers sleep on their own side.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import email.utils
import inspect
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from outrider.exceptions import ConfigError, ModelError

__all__ = ["RateLimit"]

logger = logging.getLogger("outrider")

# What the core's runner reserves for an answer when it estimates a call (chars / 3 a token).
_ANSWER_ALLOWANCE = 1000
_CHARS_PER_TOKEN = 3
_BACKOFF_CAP = 60.0


@dataclasses.dataclass(frozen=True)
class RateLimit:
    """A provider's limits: ``requests_per_minute`` and/or ``tokens_per_minute``.

    ``burst_requests`` / ``burst_tokens`` are how much may start at once from idle (default:
    one second's worth, at least one request); ``max_retries`` is how many times a call refused
    with 429 is made again after the pause (then the child sees the error).
    """

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_requests: float | None = None
    burst_tokens: float | None = None
    max_retries: int = 5

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute", "burst_requests", "burst_tokens"):
            value = getattr(self, name)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ConfigError(f"RateLimit {name}: must be a positive number, got {value!r}")
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ConfigError(
                "RateLimit: give requests_per_minute, tokens_per_minute or both, got neither"
            )
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or not 0 <= self.max_retries <= 100
        ):
            raise ConfigError(f"RateLimit max_retries: must be 0..100, got {self.max_retries!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def label(self) -> str:
        """The limit in words (``60 requests/min, 10000 tokens/min``), for messages."""
        parts = []
        if self.requests_per_minute is not None:
            parts.append(f"{self.requests_per_minute:g} requests/min")
        if self.tokens_per_minute is not None:
            parts.append(f"{self.tokens_per_minute:g} tokens/min")
        return ", ".join(parts)


class _Pacer:
    """The limiter's state (no lock, no clock: the owner supplies both)."""

    def __init__(self, limit: RateLimit) -> None:
        self.limit = limit
        rpm, tpm = limit.requests_per_minute, limit.tokens_per_minute
        self.req_interval = 60.0 / rpm if rpm else 0.0
        self.req_tolerance = (
            (max(1.0, limit.burst_requests or rpm / 60.0) - 1.0) * self.req_interval if rpm else 0.0
        )
        self.tok_interval = 60.0 / tpm if tpm else 0.0
        self.tok_tolerance = (limit.burst_tokens or tpm / 60.0) * self.tok_interval if tpm else 0.0
        self.req_tat = 0.0
        self.tok_tat = 0.0
        self.paused_until = 0.0
        self.backoff = 0

    def reserve(self, tokens: float, now: float, max_wait: float | None = None) -> float:
        """Book a start for a call of ``tokens``; the seconds to wait until it. A wait over
        ``max_wait`` is returned without booking (the call will not be made)."""
        start = max(now, self.paused_until)
        if self.req_interval:
            start = max(start, self.req_tat - self.req_tolerance)
        if self.tok_interval:
            start = max(start, self.tok_tat - self.tok_tolerance)
        if max_wait is not None and start - now > max_wait:
            return start - now
        if self.req_interval:
            self.req_tat = max(self.req_tat, start) + self.req_interval
        if self.tok_interval:
            self.tok_tat = max(self.tok_tat, start) + tokens * self.tok_interval
        return start - now

    def settle(self, delta_tokens: float) -> None:
        """Correct a booked call by what it really used."""
        if self.tok_interval:
            self.tok_tat += delta_tokens * self.tok_interval

    def refused(self, retry_after: float | None, now: float) -> float:
        """A 429: pause everyone; the pause in seconds."""
        if retry_after is None:
            retry_after = min(_BACKOFF_CAP, 2.0**self.backoff)
            self.backoff += 1
        self.paused_until = max(self.paused_until, now + retry_after)
        return retry_after

    def succeeded(self) -> None:
        self.backoff = 0

    def paused(self, now: float) -> bool:
        return now < self.paused_until


class Limiter(Protocol):
    """What a rate-limited model asks its provider's limiter (all calls quick, none sleeps)."""

    limit: RateLimit

    def reserve(self, tokens: float, max_wait: float | None = None) -> float: ...
    def settle(self, delta_tokens: float) -> None: ...
    def refused(self, retry_after: float | None) -> float: ...
    def succeeded(self) -> None: ...
    def paused(self) -> bool: ...


class LocalLimiter:
    """A limiter for the tasks of this process."""

    def __init__(self, limit: RateLimit) -> None:
        self.limit = limit
        self._pacer = _Pacer(limit)
        self._lock = threading.Lock()

    def reserve(self, tokens: float, max_wait: float | None = None) -> float:
        with self._lock:
            return self._pacer.reserve(tokens, time.monotonic(), max_wait)

    def settle(self, delta_tokens: float) -> None:
        with self._lock:
            self._pacer.settle(delta_tokens)

    def refused(self, retry_after: float | None) -> float:
        with self._lock:
            return self._pacer.refused(retry_after, time.monotonic())

    def succeeded(self) -> None:
        with self._lock:
            self._pacer.succeeded()

    def paused(self) -> bool:
        with self._lock:
            return self._pacer.paused(time.monotonic())


class RayLimiterActor:
    """The Ray actor behind a shared limiter (one per provider, methods run one at a time)."""

    def __init__(self, limit: dict[str, Any]) -> None:
        self._pacer = _Pacer(RateLimit(**limit))

    def reserve(self, tokens: float, max_wait: float | None = None) -> float:
        return self._pacer.reserve(tokens, time.monotonic(), max_wait)

    def settle(self, delta_tokens: float) -> None:
        self._pacer.settle(delta_tokens)

    def refused(self, retry_after: float | None) -> float:
        return self._pacer.refused(retry_after, time.monotonic())

    def succeeded(self) -> None:
        self._pacer.succeeded()

    def paused(self) -> bool:
        return self._pacer.paused(time.monotonic())


class RayLimiter:
    """A worker's handle on a provider's limiter actor (picklable: it travels with the task)."""

    def __init__(self, actor: Any, limit: RateLimit) -> None:
        self.actor = actor
        self.limit = limit

    def reserve(self, tokens: float, max_wait: float | None = None) -> float:
        import ray

        # The actor's answer is a wait measured on its clock; the wait is sent, not a time, so
        # machines' clocks need not agree.
        sent = time.monotonic()
        wait: float = ray.get(self.actor.reserve.remote(tokens, max_wait))
        return max(0.0, wait - (time.monotonic() - sent))

    def settle(self, delta_tokens: float) -> None:
        self.actor.settle.remote(delta_tokens)

    def refused(self, retry_after: float | None) -> float:
        import ray

        pause: float = ray.get(self.actor.refused.remote(retry_after))
        return pause

    def succeeded(self) -> None:
        self.actor.succeeded.remote()

    def paused(self) -> bool:
        import ray

        answer: bool = ray.get(self.actor.paused.remote())
        return answer


def estimate_tokens(request: Mapping[str, Any]) -> int:
    """A call's tokens before it is made: its messages and tools at 3 characters a token, plus
    the answer allowance the runner itself reserves."""
    try:
        size = len(json.dumps([request.get("messages"), request.get("tools")], default=str))
    except (TypeError, ValueError):
        size = 0
    return size // _CHARS_PER_TOKEN + _ANSWER_ALLOWANCE


def used_tokens(response: Any) -> int | None:
    """The total tokens a response reports, if it does."""
    usage = None
    if isinstance(response, Mapping):
        usage = response.get("usage")
    else:
        usage = getattr(response, "usage", None)
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        dump = getattr(usage, "model_dump", None)
        usage = dump() if callable(dump) else vars(usage) if hasattr(usage, "__dict__") else None
        if not isinstance(usage, Mapping):
            return None
    total = usage.get("total_tokens")
    if isinstance(total, int) and not isinstance(total, bool):
        return total
    parts = [
        usage.get(k)
        for k in ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens")
    ]
    known = [p for p in parts if isinstance(p, int) and not isinstance(p, bool)]
    return sum(known) if known else None


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)
    except Exception:
        return None
    return value if isinstance(value, str) else None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` value (seconds or an HTTP date); None if unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), 3600.0)


def rate_limited(error: BaseException) -> tuple[bool, float | None]:
    """Whether ``error`` is a provider's 429, and the ``Retry-After`` it carries (seconds)."""
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(error, "status", None)
    kind = getattr(error, "kind", None)
    is_429 = status == 429 or kind == "rate_limit" or type(error).__name__ == "RateLimitError"
    if not is_429:
        return False, None
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
        return True, float(retry_after)
    headers = getattr(getattr(error, "response", None), "headers", None)
    if headers is not None:
        ms = _header(headers, "retry-after-ms")
        if ms is not None:
            parsed = parse_retry_after(ms)
            if parsed is not None:
                return True, parsed / 1000.0
        return True, parse_retry_after(_header(headers, "retry-after"))
    return True, None


_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "outrider_batch_deadline", default=None
)


@contextlib.contextmanager
def task_deadline(seconds: float) -> Iterator[None]:
    """The model calls made in this context (a task's launch: the core calls the model with
    the launching caller's context) belong to a task that must end ``seconds`` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


class RateLimited(ModelError):
    """A call the rate limit would hold past its task's time limit, or a 429 it gave up on
    (``status_code`` 429 to the core, which ends the task as ``rate_limited``)."""

    status_code = 429

    def __init__(self, message: str) -> None:
        super().__init__(message, "rate_limit", 429)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self),))


def _time_left() -> float | None:
    """Seconds left of the calling task's time limit; None outside a task."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _over_deadline(wait: float, what: str, cause: BaseException | None = None) -> None:
    """Raise :class:`RateLimited` when waiting ``wait`` seconds would outlast the task."""
    left = _time_left()
    if left is not None and wait > left:
        error = RateLimited(
            f"rate limited: {what} asks this call to wait {wait:.1f} s, more than the "
            f"{left:.1f} s left of the task's time limit (timeout_seconds); "
            "not waited out"
        )
        raise error from cause


def _given_up(error: BaseException) -> RateLimited | None:
    """For a call refused for good: None when the core sees ``error`` as the 429 it is (an SDK
    error's status), else a :class:`RateLimited` saying what it was, so that the task ends
    ``rate_limited`` either way."""
    if getattr(error, "status_code", None) == 429:
        return None
    return RateLimited(f"rate limited after every retry: {type(error).__name__}: {error}")


def limited(model: Callable[[dict[str, Any]], Any], limiter: Limiter) -> Callable[..., Any]:
    """``model`` behind ``limiter``: each call waits for its start, reports its tokens, and a
    429 pauses the provider and is made again (``limit.max_retries`` times)."""
    retries = limiter.limit.max_retries
    name = getattr(model, "__qualname__", type(model).__qualname__)
    what = f"the batch's rate limit ({limiter.limit.label}; a provider's 429 pauses it)"

    if inspect.iscoroutinefunction(model) or inspect.iscoroutinefunction(
        getattr(model, "__call__", None)  # noqa: B004
    ):

        async def call_async(request: dict[str, Any]) -> Any:
            estimate = estimate_tokens(request)
            for attempt in range(retries + 1):
                # A 429 that came while this call waited for its slot pauses it too: book again.
                while True:
                    wait = await asyncio.to_thread(limiter.reserve, estimate, _time_left())
                    _over_deadline(wait, what)
                    await asyncio.sleep(wait)
                    if not await asyncio.to_thread(limiter.paused):
                        break
                try:
                    response = await model(request)
                except Exception as error:
                    is_429, after = rate_limited(error)
                    if not is_429:
                        raise
                    if attempt == retries:
                        given_up = _given_up(error)
                        if given_up is None:
                            raise
                        raise given_up from error
                    pause = await asyncio.to_thread(limiter.refused, after)
                    logger.warning("%s: rate limited (429); every task pauses %.2f s", name, pause)
                    _over_deadline(pause, "the provider (429, Retry-After)", error)
                    continue
                limiter.succeeded()
                used = used_tokens(response)
                if used is not None:
                    limiter.settle(used - estimate)
                return response
            raise AssertionError("unreachable")

        call_async.__qualname__ = f"rate_limited({name})"
        return call_async

    def call(request: dict[str, Any]) -> Any:
        estimate = estimate_tokens(request)
        for attempt in range(retries + 1):
            # A 429 that came while this call waited for its slot pauses it too: book again.
            while True:
                wait = limiter.reserve(estimate, _time_left())
                _over_deadline(wait, what)
                if wait > 0:
                    time.sleep(wait)
                if not limiter.paused():
                    break
            try:
                response = model(request)
            except Exception as error:
                is_429, after = rate_limited(error)
                if not is_429:
                    raise
                if attempt == retries:
                    given_up = _given_up(error)
                    if given_up is None:
                        raise
                    raise given_up from error
                pause = limiter.refused(after)
                logger.warning("%s: rate limited (429); every task pauses %.2f s", name, pause)
                _over_deadline(pause, "the provider (429, Retry-After)", error)
                continue
            limiter.succeeded()
            used = used_tokens(response)
            if used is not None:
                limiter.settle(used - estimate)
            return response
        raise AssertionError("unreachable")

    call.__qualname__ = f"rate_limited({name})"
    return call
