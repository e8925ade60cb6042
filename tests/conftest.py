"""Shared fixtures: a leak guard for every test and a real Mosquitto broker."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import HealthCheck, settings

from table_controller.rigs.broker import MosquittoBroker

settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=False,
    print_blob=True,
)
settings.load_profile("ci")

THREAD_GRACE_S = 5.0


def _open_fds() -> dict[int, str]:
    """Descriptors that a test could leak: sockets, pipes, ptys and device files."""
    out: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(("socket:", "pipe:", "/dev/pts", "/dev/ptmx", "anon_inode:[eventfd]")):
            out[int(name)] = target
    return out


@pytest.fixture(autouse=True)
def _leak_guard() -> Iterator[None]:
    """Fail any test that leaves threads or descriptors open behind it."""
    threads_before = set(threading.enumerate())
    fds_before = _open_fds()
    yield
    for thread in set(threading.enumerate()) - threads_before:
        thread.join(timeout=THREAD_GRACE_S)
    leaked_threads = [t.name for t in set(threading.enumerate()) - threads_before if t.is_alive()]
    gc.collect()
    leaked_fds = {fd: t for fd, t in _open_fds().items() if fds_before.get(fd) != t}
    assert not leaked_threads, f"test left threads running: {leaked_threads}"
    assert not leaked_fds, f"test left descriptors open: {leaked_fds}"


@pytest.fixture(autouse=True)
async def _task_guard() -> AsyncIterator[None]:
    """Fail any async test that leaves tasks running on its loop."""
    yield
    current = asyncio.current_task()
    leftover = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    for task in leftover:
        task.cancel()
    if leftover:
        await asyncio.gather(*leftover, return_exceptions=True)
    names = [t.get_name() for t in leftover]
    assert not names, f"test left tasks running: {names}"


@pytest.fixture(scope="session")
def mosquitto() -> Iterator[MosquittoBroker]:
    """One real broker for the session, on a free loopback port."""
    broker = MosquittoBroker()
    broker.start()
    yield broker
    broker.close()


@pytest.fixture
def own_mosquitto() -> Iterator[MosquittoBroker]:
    """A broker for one test alone, which the test may stop and start again."""
    broker = MosquittoBroker()
    broker.start()
    yield broker
    broker.close()


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port where nothing listens, for as long as the test runs: a socket holds
    it bound without listening, so no other test's server can take it and every connection
    is refused (a port merely found free may be some broker's a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        port: int = held.getsockname()[1]
        yield port
