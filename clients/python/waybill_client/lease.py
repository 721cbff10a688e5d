"""What a side effect is handed (StepContext), and the thread that keeps its claim's lease alive meanwhile.

The lease is renewed every third of its length. When a renewal is refused (LEASE_LOST: an operator expired
the claim, or another worker took it over after we stalled) or no renewal has succeeded for a whole lease,
the claim must be taken as lost: the context's `lease_lost` turns true, `check()` raises, and the commit that
follows is refused. A side effect that checks between its own sub-steps stops doing work nobody will keep.
"""
from __future__ import annotations

import threading
import time
from typing import Optional

from .errors import LeaseLostError, WaybillError
from .transport import Transport


class StepContext:
    """Handed to the side effect: pass `idempotency_key` on (an Idempotency-Key header) and call `check()`."""

    def __init__(self, idempotency_key: str, step: Optional[int], attempt: int, in_doubt: bool):
        self.idempotency_key = idempotency_key
        self.step = step
        self.attempt = attempt
        #: The previous holder's lease ran out mid-execute: its side effect may or may not have happened.
        self.in_doubt = in_doubt
        self._lost: Optional[str] = None

    @property
    def lease_lost(self) -> bool:
        return self._lost is not None

    @property
    def lost_reason(self) -> Optional[str]:
        return self._lost

    def check(self) -> None:
        """Raises LeaseLostError once the claim is no longer ours; call it between expensive sub-steps."""
        if self._lost is not None:
            raise LeaseLostError(f"claim on {self.idempotency_key} lost: {self._lost}")

    def _mark_lost(self, reason: str) -> None:
        if self._lost is None:
            self._lost = reason


class LeaseKeeper:
    """Renews one claim in a daemon thread until stopped; marks the context lost when it cannot."""

    def __init__(self, transport: Transport, key: str, token: str, lease_ms: int, ctx: StepContext):
        self._transport, self._key, self._token, self._lease_ms, self._ctx = transport, key, token, lease_ms, ctx
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"waybill-lease {key}", daemon=True)

    def __enter__(self) -> "LeaseKeeper":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        interval = self._lease_ms / 3000.0
        last_ok = time.monotonic()
        while not self._stop.wait(interval):
            try:
                # Retried only within the interval: the next renewal is the real retry.
                self._transport.call("POST", "/checkpoint/renew",
                                     {"key": self._key, "token": self._token, "leaseMs": self._lease_ms}, retry_for=interval)
                last_ok = time.monotonic()
            except LeaseLostError as e:
                self._ctx._mark_lost(f"renewal refused ({e})")
                return
            except WaybillError as e:
                if time.monotonic() - last_ok >= self._lease_ms / 1000.0:
                    self._ctx._mark_lost(f"no renewal succeeded for a whole lease ({e})")
                    return
