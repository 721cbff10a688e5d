"""The article's Checkpoint — load, save_progress, run_once — with Waybill's HTTP protocol as the store.

run_once is claim -> execute -> commit: a committed key returns its stored result ("skipped"); a key another
holder is executing is polled until it commits ("awaited") or its lease runs out (then we take it over, and
the step is *in doubt*: the holder may have done its side effect before it died); a claimed key runs the side
effect while a thread renews the lease, and the result is committed with the fencing token, so a holder that
lost its claim cannot commit. A declared run (workflow=…) is listed by name with its progress, and an
operator's pause or cancel, read from each commit's answer, stops the loop before its next step.
"""
from __future__ import annotations

import inspect
import json
import logging
import os
import signal
import socket
import threading
import time
import urllib.parse
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from .errors import (InvalidInputError, LeaseLostError, NotFoundError, RunCancelledError, RunPausedError,
                     RunStoppedError)
from .lease import LeaseKeeper, StepContext
from .transport import Transport

log = logging.getLogger("waybill_client")

Status = str  # "executed" | "skipped" | "awaited"

#: The most characters of JSON a step's recorded input may have: the server's bound (lib/checkpoint/step-input.ts).
INPUT_MAX_CHARS = 16_384


def input_json(value: Any) -> str:
    """A step's input as the JSON text the server stores, or InvalidInputError naming `input` (not JSON, too long).

    Checked before the claim, so a bad input never costs a side effect that then cannot be committed."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"input: must be a JSON value ({e})") from None
    # The server counts UTF-16 code units, as JavaScript does: a character beyond the BMP is two.
    length = len(text.encode("utf-16-le")) // 2
    if length > INPUT_MAX_CHARS:
        raise InvalidInputError(f"input: must be at most {INPUT_MAX_CHARS:,} characters as JSON (this is {length:,})")
    return text


class Checkpoint:
    """The run's checkpoint store over HTTP. `lease_ms` (10 s): how long a claim outlives a killed process,
    so how long a restarted agent waits before it runs that step again; renewed every third of it meanwhile."""

    def __init__(self, base_url: str, run_id: str, token: Optional[str] = None, worker_id: Optional[str] = None,
                 workflow: Optional[str] = None, total_steps: Optional[int] = None, *, lease_ms: int = 10_000,
                 input: Any = None, managed: bool = False, timeout: float = 30.0, retry_for: float = 60.0):
        if not isinstance(run_id, str) or not run_id or len(run_id) > 200:
            raise InvalidInputError("run_id must be a non-empty string of at most 200 characters")
        if not isinstance(lease_ms, int) or not 100 <= lease_ms <= 86_400_000:
            raise InvalidInputError("lease_ms must be a whole number of milliseconds, 100 to 86,400,000")
        self.run_id = run_id
        self.worker_id = worker_id or f"py-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.workflow = workflow
        self.total_steps = total_steps
        self.input = input
        #: Spawned by a Waybill worker, which owns the run's row: no begin or end from here.
        self.managed = managed
        self.lease_ms = lease_ms
        self._http = Transport(base_url, token, timeout=timeout, retry_for=retry_for)
        self._pending = {"skipped": 0, "awaited": 0}  # counts ride with the next progress write
        self._begun = False
        self._stop: Optional[str] = None
        self._handles_term = False
        #: Keys this process took over from a holder whose lease ran out: their side effect may have run twice.
        self.in_doubt: List[str] = []

    @classmethod
    def from_env(cls, **overrides: Any) -> "Checkpoint":
        """What a Waybill worker hands a program it spawns: WAYBILL_URL, WAYBILL_RUN_ID, WAYBILL_TOKEN, …"""
        env = os.environ
        missing = [name for name in ("WAYBILL_URL", "WAYBILL_RUN_ID") if not env.get(name)]
        if missing and not all(k in overrides for k in ("base_url", "run_id")):
            raise InvalidInputError(f"{' and '.join(missing)} not set: run this program from a Waybill worker, or set them")
        args: Dict[str, Any] = {
            "base_url": env.get("WAYBILL_URL"), "run_id": env.get("WAYBILL_RUN_ID"), "token": env.get("WAYBILL_TOKEN") or None,
            "worker_id": env.get("WAYBILL_WORKER_ID") or None, "workflow": env.get("WAYBILL_WORKFLOW") or None,
            "managed": env.get("WAYBILL_MANAGED") == "1",
        }
        if env.get("WAYBILL_LEASE_MS"):
            if not env["WAYBILL_LEASE_MS"].isdigit():
                raise InvalidInputError(f"WAYBILL_LEASE_MS must be a whole number of milliseconds, not {env['WAYBILL_LEASE_MS']!r}")
            args["lease_ms"] = int(env["WAYBILL_LEASE_MS"])
        args.update(overrides)
        ckpt = cls(**args)
        if ckpt.managed:
            ckpt.stop_when_told(int(env["WAYBILL_PARENT_PID"]) if env.get("WAYBILL_PARENT_PID", "").isdigit() else None)
        return ckpt

    def stop_when_told(self, parent_pid: Optional[int] = None) -> None:
        """Stop after the step in hand on SIGTERM, or once the worker that spawned us is gone.

        A worker stops its program with SIGTERM for a pause, a cancel or a drain, and SIGKILLs it only after a
        grace period: the step in hand commits first. A worker that was itself killed sends nothing; its
        program notices it was re-parented and stops the same way, so the next worker's copy runs alone.
        """
        def on_term(signum: int, frame: Any) -> None:
            self._stop = self._stop or "terminated"
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_term)
            self._handles_term = True
        if parent_pid is not None:
            def watch() -> None:
                while self._stop is None:
                    if os.getppid() != parent_pid:
                        self._stop = "orphaned"
                        return
                    time.sleep(0.2)
            threading.Thread(target=watch, name="waybill-parent-watch", daemon=True).start()

    @property
    def declared(self) -> bool:
        return self.workflow is not None and not self.managed

    def _run_path(self, tail: str) -> str:
        return f"/checkpoint/{urllib.parse.quote(self.run_id, safe='')}/{tail}"

    # --- the run ----------------------------------------------------------------------------------------

    def begin(self) -> str:
        """Declares the run (once): listed by name with its total. A paused or cancelled run does not start."""
        if not self.declared or self._begun:
            return "running"
        answer, _ = self._http.call("POST", self._run_path("begin"), {
            "workflow": self.workflow, "totalSteps": self.total_steps, "input": self.input, "workerId": self.worker_id})
        self._begun = True
        status = str(answer["run"]["status"])
        self._note_status(status)
        self.raise_if_stopped(0)
        return status

    def complete(self, output: Any = None) -> None:
        if self.declared and self._begun:
            self._http.call("POST", self._run_path("end"), {"outcome": "completed", "output": output, "workerId": self.worker_id})

    def fail(self, error: BaseException) -> None:
        if self.declared and self._begun:
            self._http.call("POST", self._run_path("end"), {"outcome": "failed", "error": f"{type(error).__name__}: {error}"[:10_000],
                                                            "workerId": self.worker_id})

    @property
    def stop_reason(self) -> Optional[str]:
        """'paused' or 'cancelled' once an answer said so: the loop runs no further step."""
        return self._stop

    def raise_if_stopped(self, step: int) -> None:
        if self._stop is None:
            return
        error: RunStoppedError
        if self._stop == "paused":
            error = RunPausedError(f"run {self.run_id} was paused; stopped before step {step} (resume it, then run this again)",
                                   self.run_id, step)
        elif self._stop == "cancelled":
            error = RunCancelledError(f"run {self.run_id} was cancelled; stopped before step {step}", self.run_id, step)
        else:
            why = "its worker is gone" if self._stop == "orphaned" else "asked to stop (SIGTERM)"
            error = RunStoppedError(f"run {self.run_id}: {why}; stopped before step {step}", self.run_id, step)
        if self.declared and self._begun:
            try:  # the operator's status stands; this only lets go of the run's owner
                self._http.call("POST", self._run_path("end"), {"outcome": "stopped", "workerId": self.worker_id}, retry_for=5)
            except Exception:  # noqa: BLE001 - best effort, the stop itself is what to report
                pass
            self._begun = False
        if self._handles_term and threading.current_thread() is threading.main_thread():
            # Stopping now: the worker's SIGTERM for the same pause may land while the interpreter shuts down,
            # after it has put back the default action for our handler, and turn this clean stop (exit 3) into
            # a kill. An ignored signal stays ignored through shutdown.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise error

    def _note_status(self, status: Optional[str]) -> None:
        if status in ("paused", "cancelled"):
            self._stop = status

    # --- the article's three methods ----------------------------------------------------------------------

    def load(self) -> Tuple[int, Dict[str, Any]]:
        """Call on resume: the reached step and the resume state, (0, {}) for a new run."""
        self.begin()
        try:
            row, _ = self._http.call("GET", self._run_path("progress"))
        except NotFoundError:
            return 0, {}
        state = row.get("state")
        return int(row["step"]), state if isinstance(state, dict) else {}

    def save_progress(self, step: int, state: Dict[str, Any]) -> None:
        """Update only the map; the cargo is already committed. Carries the skips and awaits seen since."""
        counters, self._pending = self._pending, {"skipped": 0, "awaited": 0}
        self._http.call("PUT", self._run_path("progress"), {"step": step, "state": state, "counters": counters})

    def run_once(self, idem_key: str, side_effect: Callable[..., Any], fingerprint: Optional[str] = None, *,
                 step: Optional[int] = None, progress: Optional[Tuple[int, Dict[str, Any]]] = None,
                 input: Any = None) -> Tuple[Any, Status]:
        """claim -> execute -> commit; the side effect runs once per key. `side_effect()` or `side_effect(ctx)`.

        `progress=(step, state)` is written in the commit's transaction (then no save_progress is needed for an
        executed step). `input` (any JSON, at most INPUT_MAX_CHARS as JSON) is what the step is given, stored
        beside its result and shown on its step page; a value that is not JSON or too long is InvalidInputError
        before anything is claimed. Returns (result, "executed" | "skipped" | "awaited").
        """
        recorded = None if input is None else input_json(input)
        token = uuid.uuid4().hex  # ours, so a claim retried after a lost answer finds the claim ours
        waited = False
        while True:
            claim, _ = self._http.call("POST", "/checkpoint/claim", {
                "runId": self.run_id, "key": idem_key, "fingerprint": fingerprint, "leaseMs": self.lease_ms,
                "step": step, "workerId": self.worker_id, "token": token})
            if claim["outcome"] == "committed":
                status = "awaited" if waited else "skipped"
                self._pending[status] += 1
                return claim.get("result"), status
            if claim["outcome"] == "claimed":
                break
            waited = True  # "held": another holder's lease is live; poll until it commits or its lease passes
            time.sleep(max(0.01, claim.get("retryAfterMs", 1000) / 1000))
        in_doubt = bool(claim.get("tookOver"))
        if in_doubt:
            self.in_doubt.append(idem_key)
            log.warning("waybill: %s in doubt: its previous holder's lease ran out mid-execute (attempt %s); running it again "
                        "with the same idempotency key", idem_key, claim.get("attempt"))
        ctx = StepContext(idem_key, step, int(claim.get("attempt", 1)), in_doubt, transport=self._http,
                          run_id=self.run_id, token=token)
        started = time.monotonic()
        try:
            with LeaseKeeper(self._http, idem_key, token, self.lease_ms, ctx):
                result = _call(side_effect, ctx)
        except BaseException as e:
            self._release(idem_key, token, step, repr(e)[:10_000])
            raise
        if ctx.lease_lost:
            raise LeaseLostError(f"claim on {idem_key} lost while its side effect ran ({ctx.lost_reason}); nothing was committed")
        body: Dict[str, Any] = {
            "runId": self.run_id, "key": idem_key, "token": token, "result": result, "step": step, "fingerprint": fingerprint,
            # workerId and durationMs make a commit retried after a lost answer recognisable as this one.
            "workerId": self.worker_id, "durationMs": round((time.monotonic() - started) * 1000, 3),
        }
        if progress is not None:
            counters, self._pending = self._pending, {"skipped": 0, "awaited": 0}
            body["progress"] = {"step": progress[0], "state": progress[1], "counters": counters}
        if recorded is not None:
            body["input"] = json.loads(recorded)
        try:
            answer, _ = self._http.call("POST", "/checkpoint/commit", body)
        except InvalidInputError as e:
            # The server refused the input after the side effect ran (its own bound, measured its way): the claim
            # is still ours and the result must land, so it is committed without the input rather than lost.
            if "input" not in ((e.body.get("error") or {}).get("fields") or {}):
                raise
            log.warning("waybill: %s: the input was not recorded (%s); committing the result without it", idem_key, e)
            del body["input"]
            answer, _ = self._http.call("POST", "/checkpoint/commit", body)
        run = answer.get("run")
        if isinstance(run, dict):
            self._note_status(run.get("status"))
        return result, "executed"

    def _release(self, key: str, token: str, step: Optional[int], error: str) -> None:
        try:
            self._http.call("POST", "/checkpoint/release", {"key": key, "token": token, "error": error, "runId": self.run_id, "step": step},
                            retry_for=10)
        except LeaseLostError:
            pass  # gone already (expired, or our own earlier attempt landed): nothing to give back
        except Exception as e:  # noqa: BLE001 - the side effect's own error is the one to raise
            log.warning("waybill: could not release %s (%s); its lease runs out on its own", key, e)


def _call(side_effect: Callable[..., Any], ctx: StepContext) -> Any:
    """The article's zero-argument side effects, and ones that take the step's context."""
    return side_effect(ctx) if _takes_argument(side_effect) else side_effect()


def _takes_argument(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # `lambda step=step: …` binds a loop variable; only a parameter without a default is asking for the context.
    return any(p.kind == p.VAR_POSITIONAL for p in params) or any(p.default is p.empty for p in positional)
