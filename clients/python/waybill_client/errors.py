"""Errors, one class per code of Waybill's API (`{"error": {"code", "message"}}`), under one base.

Every message is one line that says what failed and where, so a script that prints `str(error)` and exits
gives its user something to act on, not a traceback from inside urllib.
"""
from __future__ import annotations

from typing import Any, Dict, Optional


class WaybillError(Exception):
    """Anything the client or the server refused. `code` is the API's error code; `status` the HTTP status."""

    code = "WAYBILL_ERROR"

    def __init__(self, message: str, status: Optional[int] = None, body: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.status = status
        self.body = body or {}


class InvalidInputError(WaybillError):
    code = "INVALID_INPUT"


class InvalidJsonError(WaybillError):
    code = "INVALID_JSON"


class UnauthenticatedError(WaybillError):
    code = "UNAUTHENTICATED"


class ForbiddenError(WaybillError):
    code = "FORBIDDEN"


class NotFoundError(WaybillError):
    code = "NOT_FOUND"


class ConflictError(WaybillError):
    code = "CONFLICT"


class InvalidTransitionError(WaybillError):
    code = "INVALID_TRANSITION"


class LeaseLostError(WaybillError):
    """The claim is no longer ours (expired, taken over, expired by an operator): its result is not committed."""

    code = "LEASE_LOST"


class PayloadTooLargeError(WaybillError):
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaTypeError(WaybillError):
    code = "UNSUPPORTED_MEDIA_TYPE"


class IdempotencyKeyReuseError(WaybillError):
    """The key was committed with another input fingerprint: the keys are not derived from what is processed."""

    code = "IDEMPOTENCY_KEY_REUSE"


class StoreUnavailableError(WaybillError):
    """503 after every retry: the server is up but its store is not."""

    code = "STORE_UNAVAILABLE"


class InternalError(WaybillError):
    code = "INTERNAL"


class ConnectionFailedError(WaybillError):
    """The server could not be reached at all (wrong URL, not running, network down), after the retries."""

    code = "CONNECTION_FAILED"


class NotWaybillError(WaybillError):
    """Something answered at the base URL, but not Waybill's API (an HTML page, another service)."""

    code = "NOT_WAYBILL"


class RunStoppedError(WaybillError):
    """An operator stopped the run; the loop stopped before its next step. Not a failure of the run."""

    code = "RUN_STOPPED"

    def __init__(self, message: str, run_id: str, step: int):
        super().__init__(message)
        self.run_id = run_id
        self.step = step


class RunPausedError(RunStoppedError):
    code = "RUN_PAUSED"


class RunCancelledError(RunStoppedError):
    code = "RUN_CANCELLED"


BY_CODE = {cls.code: cls for cls in [
    InvalidInputError, InvalidJsonError, UnauthenticatedError, ForbiddenError, NotFoundError, ConflictError,
    InvalidTransitionError, LeaseLostError, PayloadTooLargeError, UnsupportedMediaTypeError,
    IdempotencyKeyReuseError, StoreUnavailableError, InternalError,
]}


def from_answer(status: int, body: Dict[str, Any], where: str) -> WaybillError:
    """The typed error for an error answer; an unknown code is still a WaybillError carrying it."""
    given = body.get("error")
    error: Dict[str, Any] = given if isinstance(given, dict) else {}
    code = str(error.get("code", f"HTTP_{status}"))
    message = str(error.get("message", "no message")).replace("\n", " ")
    cls = BY_CODE.get(code, WaybillError)
    exc = cls(f"{where}: {code} (HTTP {status}): {message}", status, body)
    if cls is WaybillError:
        exc.code = code
    return exc
