# Two commands a newcomer needs: `make demo` and `make test`. Both set up what they need:
# the Python packages in .venv, and the Debian packages the tests run for real.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench schema fuzz system engine clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

system:
	bash scripts/system-packages.sh

# The engine's rule modules compiled with mypyc (table_controller/engine/native.py): quick
# when the build is current; without a C compiler the engine runs interpreted.
engine: $(STAMP)
	$(PY) scripts/compile_engine.py

demo: engine
	$(VENV)/bin/table-controller demo $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: system lint engine
	$(VENV)/bin/pytest -n 2 $(PYTEST_ARGS)

# Every benchmark, then the journal at 1,000 and at 100,000 rounds on one disk, so that the
# two compare (/dev/shm: what grows with the journal shows there without a shared disk's
# fsyncs; --dir /var/tmp measures a disk, some ten minutes for the larger).
bench: engine
	$(PY) -m bench
	$(PY) -m bench.journal --rounds 1000 --keep-days 0 --dir /dev/shm --out bench/results/journal-1000.json
	$(PY) -m bench.journal --rounds 100000 --keep-days 0 --dir /dev/shm --out bench/results/journal-100000.json

# The parsers under coverage-guided fuzzing (atheris); make test runs a short bounded pass.
fuzz: $(STAMP)
	$(PY) -m fuzz --runs 100000 --json bench/results/fuzz.json

schema: $(STAMP)
	$(VENV)/bin/table-controller schema --out docs

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build
	rm -rf table_controller/engine/_compiled table_controller/engine/_compiled.new table_controller/engine/_compiled.old
