"""Retries with exponential backoff for remote model calls, and the error once they run out.

A call is tried again only when another try can help: HTTP 408, 409, 429 and 5xx answers,
refused or dropped connections and timeouts. Anything else (a bad key, an unknown model, a
malformed request) fails at once. Errors are recognised by what every SDK exposes (a status code
on the exception or on its ``response``, connection/timeout class names), so one policy serves
the OpenAI SDK, httpx, Ollama's client and the LangChain integrations alike.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from graphrag_got.errors import LLMError

logger = logging.getLogger(__name__)

R = TypeVar("R")

#: HTTP answers that say "try again later" (409: a conflict/lock some servers report under load).
TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
#: Exception class names (anywhere in the MRO) of connection problems and timeouts, across SDKs.
_TRANSIENT_NAMES = re.compile(r"Connect|Timeout|RemoteProtocol|ReadError|WriteError|NetworkError")
#: Longest wait honoured from a ``Retry-After`` header.
MAX_RETRY_AFTER_S = 60.0


class ProviderUnreachableError(LLMError):
    """Every try of one call failed with an error worth retrying: the provider is down or overloaded."""

    def __init__(self, message: str, tries: int):
        super().__init__(message)
        self.tries = tries


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` more tries after the first, waiting ``backoff_s``, then twice that, and so on."""

    retries: int = 3
    backoff_s: float = 1.0
    max_wait_s: float = 30.0

    def wait_before(self, retry_number: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based); a server's Retry-After wins when longer."""
        wait = min(self.max_wait_s, self.backoff_s * (2 ** (retry_number - 1)))
        if retry_after is not None:
            wait = max(wait, min(retry_after, MAX_RETRY_AFTER_S))
        return wait


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries, on itself or on its ``response`` (None when there is none)."""
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def is_transient(exc: BaseException) -> bool:
    """Whether trying the same call again may succeed."""
    if isinstance(exc, LLMError):
        return False
    status = status_of(exc)
    if status is not None:
        return status in TRANSIENT_STATUS or status >= 500
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    return any(_TRANSIENT_NAMES.search(cls.__name__) for cls in type(exc).__mro__)


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds asked for by a ``Retry-After`` header of the error's response, when it gives a number."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to our own backoff


def describe(exc: BaseException) -> str:
    """A one-line account of a failed call: the HTTP status, a stall or a slow answer, or the connection problem
    ("cannot be reached" only for a server that could not be reached)."""
    from graphrag_got.llm.providers.streaming import StalledCallError, machine_load

    if isinstance(exc, StalledCallError):
        return f"stalled: {exc}"
    status = status_of(exc)
    text = " ".join(str(exc).split())[:200]
    chain = [type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None]
    if status is None and any(name in ("ReadTimeout", "ReadTimeoutError") for name in chain):
        return f"did not answer in time ({type(exc).__name__}; the machine's load is {machine_load()})"
    if status is not None:
        return f"answered HTTP {status} ({text})" if text else f"answered HTTP {status}"
    return f"cannot be reached ({type(exc).__name__}: {text})" if text else f"cannot be reached ({type(exc).__name__})"


def call_with_retries(call: Callable[[], R], policy: RetryPolicy, *, what: str,
                      on_retry: Callable[[BaseException, float], None] | None = None,
                      sleep: Callable[[float], None] = time.sleep) -> R:
    """``call()``, tried again after transient errors; raises :class:`ProviderUnreachableError` at the end.

    ``what`` names the provider in the final message (e.g. "openai server(s) http://h:8000/v1").
    ``on_retry(error, wait_s)`` runs before each wait (the caller counts retries there).
    Errors that are not transient propagate unchanged, at once.
    """

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return policy.wait_before(state.attempt_number, retry_after(exc))

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        seconds = state.next_action.sleep if state.next_action else 0.0
        logger.warning("%s %s; retry %d of %d in %.1fs", what, describe(exc) if exc else "failed",
                       state.attempt_number, policy.retries, seconds)
        if on_retry is not None and exc is not None:
            on_retry(exc, seconds)

    retrying = Retrying(stop=stop_after_attempt(policy.retries + 1), wait=wait,
                        retry=retry_if_exception(is_transient), before_sleep=before_sleep, reraise=True,
                        sleep=sleep)
    try:
        return retrying(call)
    except Exception as exc:
        if not is_transient(exc):
            raise
        tries = policy.retries + 1
        account = describe(exc)
        if account.startswith(("stalled", "did not answer")):
            raise ProviderUnreachableError(
                f"the LLM provider stopped answering: {what} {account}, on {tries} tries. Check that it still runs "
                "(`graphrag-got doctor`) and what else keeps the cores busy; raise GRAPHRAG_LLM_STALL_TIMEOUT on a "
                "machine this busy, then rerun the command: finished work is cached and resumes.",
                tries=tries,
            ) from exc
        raise ProviderUnreachableError(
            f"the LLM provider is unreachable: {what} {account} on {tries} tries. Check that it runs and "
            "answers (`graphrag-got doctor`), then rerun the command: finished work is cached and resumes.",
            tries=tries,
        ) from exc
