"""Waybill's checkpoint client: the article's Checkpoint and run_agent over Waybill's HTTP protocol.

    from waybill_client import Checkpoint, run_agent
    ckpt = Checkpoint("http://127.0.0.1:3000", "nightly-1", token=TOKEN, workflow="nightly")
    report = run_agent(items, ckpt, lambda item, ctx: call_model(item, idempotency_key=ctx.idempotency_key))
"""
from .agent import content_fingerprint, run_agent
from .checkpoint import Checkpoint
from .errors import (ConflictError, ConnectionFailedError, ForbiddenError, IdempotencyKeyReuseError, InternalError,
                     InvalidInputError, InvalidJsonError, InvalidTransitionError, LeaseLostError, NotFoundError,
                     NotWaybillError, PayloadTooLargeError, RunCancelledError, RunPausedError, RunStoppedError,
                     StoreUnavailableError, UnauthenticatedError, UnsupportedMediaTypeError, WaybillError)
from .excepthook import install as _install_excepthook
from .lease import StepContext

_install_excepthook()

__version__ = "0.1.0"

__all__ = [
    "Checkpoint", "StepContext", "run_agent", "content_fingerprint", "WaybillError", "ConflictError", "ConnectionFailedError",
    "ForbiddenError", "IdempotencyKeyReuseError", "InternalError", "InvalidInputError", "InvalidJsonError",
    "InvalidTransitionError", "LeaseLostError", "NotFoundError", "NotWaybillError", "PayloadTooLargeError",
    "RunCancelledError", "RunPausedError", "RunStoppedError", "StoreUnavailableError", "UnauthenticatedError",
    "UnsupportedMediaTypeError",
]
