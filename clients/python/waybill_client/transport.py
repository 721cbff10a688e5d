"""One HTTP call to Waybill's API, retried while its answer may be lost.

Every protocol call is safe to send twice: a claim carries the client's own token (a retry finds the claim its
own), a commit names its worker and duration (a retry finds its row and is answered as committed), renew and
progress writes are idempotent, and a release retried after it landed is told LEASE_LOST, which the caller
reads as done. So a connection refused or reset, a timeout, or a 503 is retried with backoff (a 503's
Retry-After honoured) for up to `retry_for` seconds; any other answer is final, raised as a typed error.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Optional, Tuple

from .errors import ConnectionFailedError, InvalidInputError, NotWaybillError, StoreUnavailableError, from_answer

# Failures after which the request may or may not have reached the server.
_LOST = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.RemoteDisconnected,
         http.client.IncompleteRead, http.client.BadStatusLine, socket.timeout, TimeoutError)


# A W3C trace context (https://www.w3.org/TR/trace-context/): the worker hands its run span's as TRACEPARENT.
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


def traceparent_from_env() -> Optional[str]:
    """TRACEPARENT when it is a well-formed traceparent, else None (a malformed one is ignored, as the spec asks)."""
    value = os.environ.get("TRACEPARENT", "").strip().lower()
    return value if _TRACEPARENT.match(value) else None


def check_base_url(base_url: str) -> str:
    """The base URL without a trailing slash; a clear error for anything that is not http(s)://host[:port]."""
    if not isinstance(base_url, str) or not base_url.strip():
        raise InvalidInputError("base_url is empty: give the dashboard's address, e.g. http://127.0.0.1:3000 (WAYBILL_URL)")
    parsed = urllib.parse.urlsplit(base_url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InvalidInputError(f"base_url {base_url!r} is not an http(s) URL such as http://127.0.0.1:3000 (WAYBILL_URL)")
    if parsed.query or parsed.fragment:
        raise InvalidInputError(f"base_url {base_url!r} must not have a query or fragment")
    try:
        parsed.port
    except ValueError:
        raise InvalidInputError(f"base_url {base_url!r} has an invalid port") from None
    return base_url.strip().rstrip("/")


class Transport:
    def __init__(self, base_url: str, token: Optional[str], timeout: float = 30.0, retry_for: float = 60.0):
        self.base_url = check_base_url(base_url)
        if token is not None and (not isinstance(token, str) or not token.strip() or any(c.isspace() for c in token.strip())):
            raise InvalidInputError("token must be a non-empty string without spaces (WAYBILL_TOKEN)")
        self.token = token.strip() if token else None
        self.timeout = timeout
        self.retry_for = retry_for
        # Until the server has answered once, a refused connection is most likely a wrong URL: give up sooner.
        self.reached = False
        # Sent with every call, so the server's spans of this program's steps join the run's trace.
        self.traceparent = traceparent_from_env()

    def call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
             retry_for: Optional[float] = None) -> Tuple[Any, bool]:
        """The answer's JSON and whether an earlier attempt may have landed (its answer was lost)."""
        url = self.base_url + "/api/v1" + path
        where = f"{method} {url}"
        if body is not None:
            body = {k: v for k, v in body.items() if v is not None}  # absent, not null: the API is strict
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.traceparent:
            headers["traceparent"] = self.traceparent
        deadline = time.monotonic() + (self.retry_for if retry_for is None else retry_for)
        maybe_landed = False
        attempt = 0
        while True:
            attempt += 1
            wait: Optional[float] = None
            problem = ""
            try:
                request = urllib.request.Request(url, data=data, method=method, headers=headers)
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                    self.reached = True
                    return _json_or_raise(raw, response.status, response.headers.get("Content-Type"), where), maybe_landed
            except urllib.error.HTTPError as e:
                raw = e.read()
                self.reached = True
                if e.code == 503:
                    wait = _retry_after(e.headers.get("Retry-After"))
                    problem = "HTTP 503"
                    if time.monotonic() + (wait or 0) > deadline:
                        raise StoreUnavailableError(f"{where}: still 503 (store unavailable) after {attempt} attempts", 503) from None
                else:
                    answer = _json_or_raise(raw, e.code, e.headers.get("Content-Type"), where)
                    raise from_answer(e.code, answer if isinstance(answer, dict) else {}, where) from None
            except urllib.error.URLError as e:
                reason = e.reason
                if isinstance(reason, socket.gaierror):
                    raise ConnectionFailedError(f"cannot reach Waybill at {self.base_url}: host name not found (check WAYBILL_URL)") from None
                if isinstance(reason, ssl.SSLError):
                    raise ConnectionFailedError(f"cannot reach Waybill at {self.base_url}: TLS failed ({reason})") from None
                if isinstance(reason, _LOST):
                    maybe_landed = True
                problem = str(getattr(reason, "strerror", None) or reason)
            except _LOST as e:
                maybe_landed = True
                problem = type(e).__name__
            except (ConnectionRefusedError, OSError) as e:
                problem = str(e.strerror or e)
            give_up = time.monotonic() >= deadline or (not self.reached and attempt >= 3)
            if give_up:
                hint = " (is the dashboard running, and is WAYBILL_URL right?)" if not self.reached else ""
                raise ConnectionFailedError(f"cannot reach Waybill at {self.base_url}: {problem} after {attempt} attempts{hint}") from None
            if wait is None:
                wait = min(2.0, 0.05 * 2 ** attempt) * (0.5 + random.random() / 2)
            time.sleep(max(0.0, min(wait, deadline - time.monotonic())))


def _retry_after(value: Optional[str]) -> float:
    try:
        return max(0.0, min(30.0, float(value))) if value else 1.0
    except ValueError:
        return 1.0


def _json_or_raise(raw: bytes, status: int, content_type: Optional[str], where: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        kind = (content_type or "no content type").split(";")[0]
        raise NotWaybillError(f"{where}: the server answered HTTP {status} with {kind}, not Waybill's JSON API (check WAYBILL_URL)",
                              status) from None
