"""deploy/README.md's threat table names settings and tests that exist, and every
shipped broker configuration carries the two settings the table leans on most."""

from __future__ import annotations

import re
from pathlib import Path

from tests.deploy.pit_setup import DEPLOY

ROOT = DEPLOY.parent
README = DEPLOY / "README.md"
SHORT = {
    "R": "tests/deploy/test_broker_roles.py",
    "P": "tests/deploy/test_pit_broker.py",
    "C": "tests/test_config.py",
    "S": "tests/test_publisher_config.py",
    "X": "tests/security/test_crashes.py",
}


def _threat_rows() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## 4. Threats", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][
        1:
    ]


def test_every_threat_names_a_setting_and_a_test_that_exists() -> None:
    rows = _threat_rows()
    assert len(rows) >= 15
    for row in rows:
        threat, setting, tests = (cell.strip() for cell in row.strip("|").split("|"))
        assert threat, row
        assert setting, row
        assert tests, row
        names = re.findall(r"`(test_\w+)`", tests)
        files = re.findall(r"`(tests/[\w/]+\.py)`", tests)
        assert names or files, row
        # Each test name is looked up in the file its letter (or a named file) stands for.
        letters = re.findall(r"\b([A-Z])\s+`test_", tests)
        candidates = [ROOT / SHORT[letter] for letter in letters] + [ROOT / f for f in files]
        sources = "".join(Path(c).read_text(encoding="utf-8") for c in candidates)
        for name in names:
            assert f"def {name}(" in sources, f"{name} (from: {row[:60]}...)"
        for f in files:
            assert (ROOT / f).is_file(), f


def test_every_shipped_broker_config_sets_client_ids_and_nodelay() -> None:
    confs = sorted(DEPLOY.rglob("*.conf"))
    full = [c for c in confs if re.search(r"^listener ", c.read_text(encoding="utf-8"), re.M)]
    assert full, "no complete broker configuration shipped"
    for conf in full:
        lines = conf.read_text(encoding="utf-8").splitlines()
        assert "use_username_as_clientid true" in lines, conf.name
        assert "set_tcp_nodelay true" in lines, conf.name
    # A fragment without a listener is appended to a full one, as the README says.
    readme = README.read_text(encoding="utf-8")
    for fragment in set(confs) - set(full):
        assert ">> /etc/mosquitto/mosquitto.conf" in readme
        assert fragment.name in readme
