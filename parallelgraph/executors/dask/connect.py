"""Is there a Dask scheduler at this address? Asked before a `distributed.Client` is made.

A Client to a wrong address misbehaves in two ways: to a server that answers but is not a Dask
scheduler (an HTTP port) its constructor never returns, and when its constructor fails (a
malformed address) the half-made Client's `__del__` waits 60 s at exit for a loop that is gone
and prints an ignored-exception traceback. So `check_scheduler` asks first, on its own event
loop in a thread of its own, with one deadline for everything: connect (Dask's handshake
included), send `{"op": "identity"}`, and read a reply that says `"type": "Scheduler"`. Any
failure is a `ConnectionError` naming the address and what went wrong, within `timeout_s`
(plus a little), and leaves nothing running: the thread ends with its loop, and no Client
exists to be collected later.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

#: Seconds `check_scheduler` waits for a scheduler's answer by default.
CONNECT_TIMEOUT_S = 5.0


async def _identity(address: str, timeout_s: float) -> Any:
    from distributed.comm import connect
    from distributed.security import Security

    # The TLS settings a Client would use (Dask's configuration), so tls:// works alike.
    arguments = Security().get_connection_args("client")
    comm = await connect(address, timeout=timeout_s, **arguments)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def _ask(address: str, timeout_s: float, answer: dict[str, Any]) -> None:
    async def bounded() -> Any:
        return await asyncio.wait_for(_identity(address, timeout_s), timeout_s)

    try:
        answer["reply"] = asyncio.run(bounded())
    except BaseException as problem:  # noqa: BLE001 - reported to the caller's thread
        answer["error"] = problem


def _reason(problem: BaseException, timeout_s: float) -> str:
    if isinstance(problem, (asyncio.TimeoutError, TimeoutError)):
        return f"no Dask scheduler answered within {timeout_s:g} s"
    text = str(problem).strip() or type(problem).__name__
    return text.splitlines()[0]


def check_scheduler(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Return when a Dask scheduler answers at `address`; else a ConnectionError (a ValueError
    for an address that cannot be one) naming it, within about `timeout_s` seconds."""
    answer: dict[str, Any] = {}
    asker = threading.Thread(
        target=_ask, args=(address, timeout_s, answer), name="dask-address-check", daemon=True
    )
    asker.start()
    asker.join(timeout_s + 2.0)
    where = f"Config.dask_address {address!r}"
    if asker.is_alive():  # pragma: no cover - wait_for bounds the loop; a last resort
        raise ConnectionError(f"{where}: no Dask scheduler answered within {timeout_s:g} s")
    problem = answer.get("error")
    if isinstance(problem, ValueError):
        raise ValueError(f"{where} is not a scheduler address: {_reason(problem, timeout_s)}")
    if problem is not None:
        raise ConnectionError(f"{where}: {_reason(problem, timeout_s)}")
    reply = answer.get("reply")
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        kind = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
        raise ConnectionError(f"{where} answered, but it is not a Dask scheduler (it is {kind})")
