"""Fixtures for the deploy tests: one test CA per session, pit brokers per module."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.pit_setup import PitBroker, PitCa, give_to_broker, pit_broker, run_script


@pytest.fixture(scope="session")
def pit_ca() -> Iterator[PitCa]:
    """One CA for the session, from make-test-ca.sh, readable by the broker's user."""
    root = Path(tempfile.mkdtemp(prefix="pit-ca-"))
    try:
        give_to_broker(root, 0o750)
        out = root / "ca"
        run_script("make-test-ca.sh", str(out), "localhost", "127.0.0.1")
        # As deploy/README.md installs the broker's key: root:mosquitto 0640.
        give_to_broker(out, 0o750)
        for name in ("server", "wrong-host"):
            give_to_broker(out / f"{name}.key", 0o640)
        yield PitCa(out)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def pit(pit_ca: PitCa) -> Iterator[PitBroker]:
    """The pit broker with three tables at two sites and one pit display."""
    with pit_broker(pit_ca) as setup:
        yield setup


@pytest.fixture(scope="module")
def wrong_host_pit(pit_ca: PitCa) -> Iterator[PitBroker]:
    """The same broker presenting a certificate for another host name."""
    with pit_broker(pit_ca, cert="wrong-host") as setup:
        yield setup
