"""A Python agent over Waybill's HTTP protocol (pip install --no-index ../waybill/clients/python).

    WAYBILL_URL=http://127.0.0.1:3000 WAYBILL_RUN_ID=py-notes-1 WAYBILL_TOKEN=$(npx waybill token --run py-notes-1) \
        python3 python_agent.py

Each step's "model call" gets its idempotency key (send it on as an Idempotency-Key header); here it appends
the key to effects.log. Kill it at any moment and run it again: it goes on where it stopped. A wrong URL or
token, a pause or a cancel ends it with one line on stderr (WAYBILL_DEBUG=1: the traceback).
"""
import os
import time
from typing import Any, Dict

from waybill_client import Checkpoint, StepContext, run_agent


def call_model(note: str, ctx: StepContext) -> Dict[str, Any]:
    time.sleep(float(os.environ.get("STEP_MS", "200")) / 1000)
    ctx.check()  # the claim is still ours: deliver
    with open("effects.log", "a") as f:
        f.write(ctx.idempotency_key + "\n")
    return {"summary": f"summary of {note}"}


ckpt = Checkpoint.from_env(workflow="py-notes")  # WAYBILL_URL, WAYBILL_RUN_ID, WAYBILL_TOKEN
print(run_agent([f"note {i}" for i in range(8)], ckpt, call_model))
