"""Every Mosquitto the project starts sends without Nagle's delay (deploy/README.md)."""

from __future__ import annotations

from pathlib import Path

from table_controller.rigs.broker import MosquittoBroker


def test_the_rigs_broker_sets_tcp_nodelay(tmp_path: Path) -> None:
    broker = MosquittoBroker(workdir=tmp_path)
    lines = broker.config_path.read_text(encoding="utf-8").splitlines()
    assert "set_tcp_nodelay true" in lines
