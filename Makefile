# Two entry points: `make demo` and `make test`. Each sets itself up idempotently.
VENV   := .venv
PY     := $(VENV)/bin/python
FARM   := $(VENV)/bin/farm
STAMP  := $(VENV)/.installed-stamp
DEMO_PORT ?= 5137
# bench reads PIPESTATUS to stop at a failing script while still teeing its output
SHELL  := /bin/bash

.PHONY: setup sysdeps demo test fuzz lint bench clean

# adb and chromium are required; a CJK font lets the virtual phone's screenshots show Chinese text.
SYSPKGS := adb chromium fonts-wqy-microhei

sysdeps:
	@if ! command -v adb >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1 \
			|| ! test -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc; then \
		echo "installing Debian packages: $(SYSPKGS)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSPKGS) >/dev/null; \
	fi

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV) 2>/dev/null || { \
		echo "installing Debian package python3-venv"; rm -rf $(VENV); \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null \
		&& python3 -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

setup: sysdeps $(STAMP)

demo: setup
	@bash fixtures/demo/run.sh

test: setup
	$(VENV)/bin/ruff check farm host_agent web_bench tests bench
	$(VENV)/bin/mypy farm host_agent web_bench
	$(PY) -m pytest -q -p no:cacheprovider

# Property tests only (hypothesis marks every test it runs with `hypothesis`), with fresh random examples and
# many more of them than `make test`'s derandomized run; no per-test timeout, since a long search is the point.
fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q -p no:cacheprovider -m hypothesis --timeout=0

lint: setup
	$(VENV)/bin/ruff check farm host_agent web_bench tests bench
	$(VENV)/bin/mypy farm host_agent web_bench

# Every bench script prints its detail, then one `GOAL |` line per target; the table at the end lists them all.
bench: setup
	@rm -f .bench.out; for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f 2>&1 | tee -a .bench.out; \
		test $${PIPESTATUS[0]} -eq 0 || exit 1; done; \
		echo; echo "== every goal, side by side"; $(PY) bench/goals.py .bench.out; rm -f .bench.out

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
