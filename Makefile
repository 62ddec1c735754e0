# hpvm — developer commands. `make demo` and `make test` are all a new user needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench lint clean

install: $(STAMP)

$(STAMP): pyproject.toml setup.py src/hpvm/runtime/_replay.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[cpu,cuda,opencl,tensor,dist,c,dev]"
	./tools/install-opencl-driver.sh
	$(BIN)/python tools/warm-c-toolchain.py
	touch $(STAMP)

demo: install
	$(BIN)/python examples/edge_detection.py --frames 8 --out out/demo

# PYTEST_ARGS: more pytest options, e.g. `make test PYTEST_ARGS="--durations=50"`.
test: install
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile $(PYTEST_ARGS)

# The peers the benchmarks compare with (Taichi, Warp: pyproject's `bench` extra) are
# installed by `make bench`, not by `make install`: the tests do not need them.
BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[bench]"
	touch $(BENCH_STAMP)

bench: install $(BENCH_STAMP)
	$(BIN)/python benchmarks/run.py

lint: install
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src tests examples benchmarks
	$(BIN)/lint-imports --no-cache

clean:
	rm -rf $(VENV) out build src/*.egg-info .pytest_cache .hypothesis
	find src -name "*.so" -delete
