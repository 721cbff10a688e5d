#!/usr/bin/env python3
"""The article's checkpoint loop, with Waybill's HTTP API as the store (standard library only).

A sandboxed agent that cannot reach the database keeps its progress and its committed side effects in
Waybill: load progress, then for each step claim -> run the side effect with the idempotency key -> commit
(with the new progress, in the same transaction). Kill it at any moment and run it again: it resumes where
the store says, and no step is committed twice.

    WAYBILL_URL=http://127.0.0.1:3000 WAYBILL_TOKEN=<operator token> RUN_ID=demo-1 STEPS=20 \
        python3 examples/article_loop.py

Environment: WAYBILL_URL, WAYBILL_TOKEN (the operator token: protocol writes need it), RUN_ID, STEPS,
EFFECTS (the receiver's file, default ./effects.jsonl), LEASE_MS (default 30000), and HANG_AT_STEP: after
the side effect of that step, hang instead of committing (how the tests kill it in the worst place).
"""
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request
import uuid


class WaybillError(Exception):
    def __init__(self, status, error):
        super().__init__(f"HTTP {status} {error.get('code')}: {error.get('message')}")
        self.status, self.code = status, error.get("code")


class Checkpoint:
    """The article's Checkpoint (load, save_progress, run_once), backed by /api/v1/checkpoint."""

    def __init__(self, url, token, run_id, lease_ms=30000):
        self.url, self.token, self.run_id, self.lease_ms = url.rstrip("/"), token, run_id, lease_ms
        self.worker_id = f"py-{socket.gethostname()}-{os.getpid()}"
        self.pending = {"skipped": 0, "awaited": 0}  # counts ride with the next progress write

    def _call(self, method, path, body=None, attempts=5):
        """One API call, retried when the answer is lost (connection refused or reset, a timeout, a 503).
        Safe because every call is: claims carry our own token, commits our worker id and duration."""
        if body is not None:
            body = {k: v for k, v in body.items() if v is not None}  # absent, not null: the API is strict
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(attempts):
            req = urllib.request.Request(self.url + "/api/v1" + path, data=data, method=method, headers={
                "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    return json.load(resp)
            except urllib.error.HTTPError as e:
                if e.code != 503 or attempt == attempts - 1:
                    raise WaybillError(e.code, json.load(e).get("error", {})) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if attempt == attempts - 1:
                    raise
            time.sleep(min(2.0, 0.1 * 2 ** attempt))

    def load(self):
        """The resume point: (step, state), or (0, {}) for a new run."""
        try:
            row = self._call("GET", f"/checkpoint/{urllib.request.quote(self.run_id, safe='')}/progress")
            return row["step"], row["state"]
        except WaybillError as e:
            if e.status == 404:
                return 0, {}
            raise

    def save_progress(self, step, state):
        counters, self.pending = self.pending, {"skipped": 0, "awaited": 0}
        self._call("PUT", f"/checkpoint/{urllib.request.quote(self.run_id, safe='')}/progress",
                   {"step": step, "state": state, "counters": counters})

    def run_once(self, key, side_effect, step=None, progress=None):
        """claim -> execute -> commit. Returns (result, "executed" | "skipped" | "awaited")."""
        waited = False
        token = uuid.uuid4().hex  # ours, so a claim retried after a lost answer finds the claim ours
        while True:
            claim = self._call("POST", "/checkpoint/claim", {"runId": self.run_id, "key": key, "step": step,
                                                              "leaseMs": self.lease_ms, "token": token, "workerId": self.worker_id})
            if claim["outcome"] == "committed":
                status = "awaited" if waited else "skipped"
                self.pending[status] += 1
                return claim["result"], status
            if claim["outcome"] == "claimed":
                break
            # "held": another process has a live lease on the key. Poll until it commits or its lease passes.
            waited = True
            time.sleep(claim["retryAfterMs"] / 1000)
        started = time.monotonic()
        try:
            result = side_effect(key)
        except Exception as e:
            self._call("POST", "/checkpoint/release", {"key": key, "token": token, "error": repr(e)})
            raise
        # workerId and durationMs make a commit retried after a lost answer recognisable as this one.
        body = {"runId": self.run_id, "key": key, "token": token, "result": result, "step": step,
                "workerId": self.worker_id, "durationMs": (time.monotonic() - started) * 1000}
        if progress is not None:
            counters, self.pending = self.pending, {"skipped": 0, "awaited": 0}
            body["progress"] = {"step": progress[0], "state": progress[1], "counters": counters}
        self._call("POST", "/checkpoint/commit", body)
        return result, "executed"


def deliver(effects_path, key, payload):
    """The receiver of the side effect. It honours the idempotency key, as a payment or mail API does: a key
    it has seen gets the first answer again and is recorded as a duplicate, not applied twice."""
    seen = {}
    if os.path.exists(effects_path):
        with open(effects_path) as f:
            for line in f:
                entry = json.loads(line)
                seen.setdefault(entry["key"], entry)
    first = seen.get(key)
    entry = {"key": key, "payload": payload, "duplicate": first is not None,
             "receipt": first["receipt"] if first else f"receipt-{len(seen)}"}
    with open(effects_path, "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return {"receipt": entry["receipt"]}


def run_agent(inputs, ckpt, effects_path, hang_at=None):
    start, state = ckpt.load()  # read to start
    processed = state.get("processed", 0)
    executed = skipped = 0
    for step in range(start, len(inputs)):
        key = f"{ckpt.run_id}:step:{step}"  # from what is processed: never time or attempt

        def side_effect(idem_key, step=step):
            result = deliver(effects_path, idem_key, inputs[step])
            if step == hang_at:
                print(f"hanging after the side effect of step {step}", flush=True)
                time.sleep(3600)
            return result

        # The commit writes the result, the committed mark and the new progress in one transaction.
        result, status = ckpt.run_once(key, side_effect, step=step, progress=(step + 1, {"processed": processed + 1}))
        if status == "executed":
            processed, executed = processed + 1, executed + 1
        else:
            skipped += 1
            ckpt.save_progress(step + 1, {"processed": processed})  # the map catches up; no side effect
        print(f"step {step} {status} {result['receipt']}", flush=True)
    return {"executed": executed, "skipped": skipped, "processed": processed}


def main():
    env = os.environ
    ckpt = Checkpoint(env.get("WAYBILL_URL", "http://127.0.0.1:3000"), env["WAYBILL_TOKEN"],
                      env.get("RUN_ID", "article-demo"), int(env.get("LEASE_MS", "30000")))
    inputs = [f"item-{i}" for i in range(int(env.get("STEPS", "10")))]
    hang_at = int(env["HANG_AT_STEP"]) if env.get("HANG_AT_STEP") else None
    report = run_agent(inputs, ckpt, env.get("EFFECTS", "effects.jsonl"), hang_at)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    try:
        main()
    except WaybillError as e:
        sys.exit(f"article_loop: {e}")
