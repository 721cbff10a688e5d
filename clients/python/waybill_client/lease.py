"""What a side effect is handed (StepContext), and the thread that keeps its claim's lease alive meanwhile.

The lease is renewed every third of its length. When a renewal is refused (LEASE_LOST: an operator expired
the claim, or another worker took it over after we stalled) or no renewal has succeeded for a whole lease,
the claim must be taken as lost: the context's `lease_lost` turns true, `check()` raises, and the commit that
follows is refused. A side effect that checks between its own sub-steps stops doing work nobody will keep.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Any, Dict, Optional

from .errors import InvalidInputError, LeaseLostError, WaybillError
from .transport import Transport

#: Characters of text sent per stream call: at most two UTF-16 units each, well inside the server's 65,536.
STREAM_CALL_CHARS = 16_384


class StepContext:
    """Handed to the side effect: pass `idempotency_key` on (an Idempotency-Key header) and call `check()`;
    `stream(text)` shows text on the step's page as it runs, `record_usage(...)` puts a model call made without
    the gateway in the run's usage ledger."""

    def __init__(self, idempotency_key: str, step: Optional[int], attempt: int, in_doubt: bool, *,
                 transport: Optional[Transport] = None, run_id: Optional[str] = None, token: Optional[str] = None):
        self.idempotency_key = idempotency_key
        self.step = step
        self.attempt = attempt
        #: The previous holder's lease ran out mid-execute: its side effect may or may not have happened.
        self.in_doubt = in_doubt
        self._lost: Optional[str] = None
        self._transport, self._run_id, self._token = transport, run_id, token
        # Numbered per execution of the step from 0, as the server keys them: sent again (a lost answer, the
        # step executed again), a chunk or a report writes over itself rather than adding to the step.
        self._seq = 0
        self._reports = 0
        self._sending = threading.Lock()

    def stream(self, text: str) -> None:
        """Appends `text` to the step's transcript, shown on its step page (the step needs run_once(step=n))."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text: must be a string, not {type(text).__name__}")
        with self._sending:
            for start in range(0, len(text), STREAM_CALL_CHARS):
                self._send("/checkpoint/stream", {"seq": self._seq, "text": text[start:start + STREAM_CALL_CHARS]})
                self._seq += 1

    def record_usage(self, *, model: str, input_tokens: int, output_tokens: int, cached_tokens: int = 0,
                     cost_usd: Optional[float] = None) -> Optional[float]:
        """Records a model call made without the gateway in the run's usage ledger, for this step; priced by the
        server's price table when `cost_usd` is not given. Returns the cost recorded (None: the model is not
        priced). A bad report is InvalidInputError naming its field, and nothing is recorded."""
        if not isinstance(model, str) or not model:
            raise InvalidInputError("model: must be a non-empty string")
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                            ("cached_tokens", cached_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{name}: must be a whole number >= 0, not {value!r}")
        if cached_tokens > input_tokens:
            raise InvalidInputError(f"cached_tokens: must be at most input_tokens ({input_tokens}): they are part of it")
        if cost_usd is not None and (isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float))
                                     or not math.isfinite(cost_usd) or cost_usd < 0):
            raise InvalidInputError(f"cost_usd: must be a number >= 0, not {cost_usd!r}")
        body: Dict[str, Any] = {"model": model, "inputTokens": input_tokens, "outputTokens": output_tokens,
                                "cachedTokens": cached_tokens}
        if cost_usd is not None:
            body["costUsd"] = cost_usd
        with self._sending:
            answer = self._send("/checkpoint/usage", {"n": self._reports, **body})
            self._reports += 1  # only once recorded: a refused report takes no number
        cost = answer.get("costUsd") if isinstance(answer, dict) else None
        return float(cost) if isinstance(cost, (int, float)) else None

    def _send(self, path: str, body: Dict[str, Any]) -> Any:
        if self._transport is None or self._run_id is None or self._token is None:
            raise RuntimeError("this StepContext was not handed out by run_once: it has no claim to write under")
        answer, _ = self._transport.call("POST", path, {"runId": self._run_id, "key": self.idempotency_key,
                                                        "token": self._token, **body})
        return answer

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
