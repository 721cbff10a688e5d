"""An uncaught WaybillError as one line on stderr, as the README promises of an agent that does not catch it.

A refusal's message already says what failed and where (`cannot reach Waybill at …`, `… UNAUTHENTICATED (HTTP
401): …`); the fifteen lines of urllib beneath it tell a user nothing more. Installed on import, only over
Python's own hook (a program or tool that set its own keeps it), and only for Waybill's errors: anything else,
and everything with WAYBILL_DEBUG=1, gets the full traceback. The exit status stays Python's 1.
"""
from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Optional, Type

from .errors import WaybillError


def _one_line(kind: Type[BaseException], error: BaseException, tb: Optional[TracebackType]) -> None:
    if not isinstance(error, WaybillError) or os.environ.get("WAYBILL_DEBUG", "") not in ("", "0"):
        sys.__excepthook__(kind, error, tb)
        return
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] not in ("", "-c", "-m") else "python"
    print(f"{program}: {error}", file=sys.stderr, flush=True)


def install() -> None:
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = _one_line
