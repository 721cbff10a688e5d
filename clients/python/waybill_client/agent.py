"""The article's agent loop: read to start, run each step once, advance the map.

Each executed step's commit carries the new progress (one transaction, one round trip after the claim); a
skipped step writes the map once the loop has caught up. A declared run stops before its next step when an
operator pauses or cancels it (RunPausedError / RunCancelledError), and is marked completed or failed at its end.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Dict, Optional, Sequence, Union

from .checkpoint import Checkpoint, input_json
from .errors import InvalidInputError, RunStoppedError
from .lease import StepContext


def content_fingerprint(item: Any) -> str:
    """sha-256 of the item's canonical JSON (keys sorted, no spaces): the same rule as the TS core's contentKey."""
    return hashlib.sha256(json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest()


def run_agent(inputs: Sequence[Any], ckpt: Checkpoint, call_model: Callable[..., Any], *,
              fingerprint: Union[bool, Callable[[Any], str]] = True, on_step: Optional[Callable[[int, str, Any], None]] = None
              ) -> Dict[str, int]:
    """Runs `call_model(item)` (or `call_model(item, ctx)`) once per item. Returns the report:
    processed (executed across every resume), and what this call executed, skipped and awaited."""
    if ckpt.total_steps is None:
        ckpt.total_steps = len(inputs)
    fp = None if fingerprint is False else (content_fingerprint if fingerprint is True else fingerprint)
    wants_ctx = _takes_argument_after_item(call_model)
    start, state = ckpt.load()
    report = {"processed": int(state.get("processed", 0)), "executed": 0, "skipped": 0, "awaited": 0}
    map_behind = False
    try:
        for step in range(start, len(inputs)):
            ckpt.raise_if_stopped(step)
            item = inputs[step]

            def side_effect(ctx: StepContext, item: Any = item) -> Any:
                return call_model(item, ctx) if wants_ctx else call_model(item)

            result, status = ckpt.run_once(f"{ckpt.run_id}:step:{step}", side_effect, fp(item) if fp else None, step=step,
                                           progress=(step + 1, {"processed": report["processed"] + 1}),
                                           input=_recordable(item))
            report[status] += 1
            if status == "executed":
                report["processed"] += 1
            map_behind = status != "executed"
            if on_step:
                on_step(step, status, result)
        if map_behind:  # the last steps were committed before: catch the map up once, with their counts
            ckpt.save_progress(len(inputs), {"processed": report["processed"]})
    except RunStoppedError:
        raise  # not a failure: the run keeps the status the operator gave it
    except BaseException as e:
        try:
            ckpt.fail(e)
        except Exception:  # noqa: BLE001 - the loop's own error is the one worth reporting
            pass
        raise
    ckpt.complete(report)
    return report


def _recordable(item: Any) -> Any:
    """The item as the step's recorded input, as the TS runAgent records it; None (not recorded) when it is not
    JSON or too long: recording what a step was given never fails the step."""
    try:
        input_json(item)
    except InvalidInputError:
        return None
    return item


def _takes_argument_after_item(fn: Callable[..., Any]) -> bool:
    """call_model(item) as in the article, or call_model(item, ctx) to get the idempotency key."""
    import inspect
    try:
        params = [p for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        return False
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return True
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return len(required) >= 2


__all__ = ["run_agent", "content_fingerprint"]
