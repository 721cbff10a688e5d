"""The article's experiment in Python: an agent of N steps, each a stub "model call" and a delivery to a
receiver that honours the idempotency key; kill it anywhere (SIGKILL) and run it again, and it resumes.

    WAYBILL_URL=http://127.0.0.1:3000 WAYBILL_TOKEN=… WAYBILL_RUN_ID=article-1 python3 -m waybill_client.example

Settings (environment, or WAYBILL_INPUT as JSON from a Waybill worker): STEPS / "steps" (1000), MODEL_MS /
"modelMs" (400, the stub's latency), EFFECTS (<run id>.effects.jsonl: the receiver's log, one line per
delivery, with whether the step was in doubt), STALL_AT_STEP (that step's model call takes an hour: how the article's
experiment is killed mid-execute, before the side effect). Prints a line per step and `REPORT {…}` at the end; a refusal
or an unreachable server is one line on stderr and exit 1; a pause or cancel, exit 3.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any, Dict

from . import Checkpoint, RunStoppedError, StepContext, WaybillError, run_agent


def deliver(effects_path: str, ctx: StepContext, payload: Any, worker_id: str) -> Dict[str, Any]:
    """The receiver: appends the delivery (fsynced, so a SIGKILL right after leaves it on disk), with whether
    the step was in doubt — the only way a key can arrive twice."""
    key = ctx.idempotency_key
    entry = {"key": key, "payload": payload, "pid": os.getpid(), "worker": worker_id, "inDoubt": ctx.in_doubt, "attempt": ctx.attempt}
    with open(effects_path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return {"receipt": f"r-{key}"}


def settings() -> Dict[str, Any]:
    given: Dict[str, Any] = {}
    if os.environ.get("WAYBILL_INPUT"):
        given = json.loads(os.environ["WAYBILL_INPUT"]) or {}
    return {
        "steps": int(given.get("steps", os.environ.get("STEPS", 1000))),
        "model_ms": float(given.get("modelMs", os.environ.get("MODEL_MS", 400))),
        "stall_at": int(os.environ["STALL_AT_STEP"]) if os.environ.get("STALL_AT_STEP") else None,
        # The receiver's log: the caller's path, else one per run in the working directory (a worker's data dir).
        "effects": os.environ.get("EFFECTS") or re.sub(r"[^A-Za-z0-9._-]", "_", os.environ.get("WAYBILL_RUN_ID", "run")) + ".effects.jsonl",
    }


def main() -> int:
    s = settings()
    ckpt = Checkpoint.from_env(workflow=os.environ.get("WAYBILL_WORKFLOW") or "python-article")
    inputs = [f"item-{i}" for i in range(s["steps"])]

    def call_model(item: str, ctx: StepContext) -> Dict[str, Any]:
        print(f"executing {ctx.idempotency_key}" + (" in-doubt" if ctx.in_doubt else ""), flush=True)
        time.sleep(3600 if ctx.step == s["stall_at"] else s["model_ms"] / 1000)
        ctx.check()  # the lease is still ours: deliver
        return deliver(s["effects"], ctx, item, ckpt.worker_id)

    def on_step(step: int, status: str, result: Any) -> None:
        print(f"step {step} {status}", flush=True)

    report = run_agent(inputs, ckpt, call_model, on_step=on_step)
    print("REPORT " + json.dumps({**report, "inDoubt": ckpt.in_doubt, "worker": ckpt.worker_id}), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RunStoppedError as e:
        print(f"waybill_client.example: {e}", file=sys.stderr, flush=True)
        sys.exit(3)
    except WaybillError as e:
        print(f"waybill_client.example: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
