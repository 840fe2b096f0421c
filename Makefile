# outrider task runner. `make help` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# cargo test of the python feature links libpython: point the loader at the interpreter's.
PYLIBDIR = $(shell $(BIN)/python -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')

# The SDKs, frameworks and notebook tools the integration tests run against.
INTEGRATIONS := "openai==3.57.0" "anthropic==2.16.0" "litellm==1.110.2" "openai-agents==0.24.0" \
	"pydantic-ai-slim==2.68.0" "langchain-core==1.8.3" "mcp==2.3.0" "tqdm==4.70.1" "pandas==3.1.1" \
	"pydantic==2.14.4" "httpx==0.29.0" "nbclient==0.11.0" "nbformat==5.11.1" "ipykernel==7.4.0" \
	"opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2" "ray==2.60.0"
# litellm fetches a price list from the network on import unless told not to.
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-17s %s\n", $$1, $$2}'

$(BIN)/.deps: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "maturin>=1.9.4,<2" "pytest==9.2.0" "pytest-timeout==2.4.0" "hypothesis==6.170.15" "llmock==0.2.2" "ruff==0.17.5" "mypy==2.4.1"
	# The optional integrations, tested against these exact versions (none is needed at runtime).
	$(BIN)/pip install -q $(INTEGRATIONS)
	touch $@

.PHONY: venv
venv: $(BIN)/.deps ## Create .venv with the build, test and lint tools

.PHONY: dev
dev: venv ## Build the extension (dev profile) into .venv, REPLACING a dev-release build there
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop -q

.PHONY: dev-release
dev-release: venv ## Build the extension (release profile) into .venv, for benchmarks
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop -q --release

# The abi3 wheel a user without Rust installs (one wheel for CPython 3.10+), into dist/.
.PHONY: wheel
wheel: venv ## Build the release abi3 wheel into dist/ (tests/test_wheel.py installs it without Rust)
	rm -f dist/outrider-*.whl
	$(BIN)/maturin build --release -q -o dist

.PHONY: test-rust
test-rust: ## Core tests without Python (cargo test --no-default-features)
	cargo test --no-default-features -q

.PHONY: test-python
test-python: dev ## pytest on the Python API (runs `dev`: .venv then holds a debug build)
	$(BIN)/python -m pytest -q

.PHONY: test
test: test-rust test-python ## All tests (leaves a debug build in .venv: `make dev-release` again before benchmarks)

# Every bench script's --quick mode: tiny sizes, seconds each, figures not judged; a script that
# raises or finds a wrong result fails the target. bench/real_model*.py need a real model: not here.
# search.py and scout/ndcg.py compare with rg: the venv's, from the ripgrep wheel, comes first.
BENCH_QUICK := real_model.py attack.py batch.py "batch.py --model mock --no-ray" clock.py exit.py fanout.py \
	loop.py many.py memory.py search.py scout/run.py scout/ndcg.py tokens.py
RIPGREP := ripgrep==15.1.0

$(BIN)/rg: | $(BIN)/.deps
	$(BIN)/pip install -q "$(RIPGREP)"

.PHONY: bench-quick
bench-quick: dev $(BIN)/rg ## Run every bench script's --quick mode (seconds each; figures not judged)
	@export PATH="$(abspath $(BIN)):$$PATH"; \
	for b in $(BENCH_QUICK); do \
	  echo "== bench/$$b --quick"; TIMEFORMAT="(bench/$$b --quick: %1R s)"; \
	  time $(BIN)/python bench/$$b --quick || { echo "bench-quick: bench/$$b failed"; exit 1; }; \
	done

.PHONY: lint
lint: dev ## fmt, clippy (with and without python), ruff, mypy --strict, stubtest, README types
	cargo fmt --all -- --check
	$(PYTHON) tools/check_layout.py src
	cargo clippy --all-targets --no-default-features -q -- -D warnings
	cargo clippy --all-targets -q -- -D warnings
	$(BIN)/ruff check python tests bench examples tools
	$(BIN)/ruff format --check python tests bench examples tools
	$(BIN)/mypy
	$(BIN)/python -m mypy.stubtest outrider --allowlist .stubtest-allowlist --mypy-config-file pyproject.toml
	$(MAKE) typecheck-readme

.PHONY: typecheck-readme
typecheck-readme: ## mypy --strict on README.md's ```python examples (tools/readme_examples.py)
	$(BIN)/python tools/readme_examples.py

.PHONY: fmt
fmt: venv ## Format Rust and Python
	cargo fmt --all
	$(BIN)/ruff format python tests bench examples tools
	$(BIN)/ruff check --fix python tests bench examples tools

.PHONY: notebook
notebook: dev ## Run examples/explore.ipynb headless (nbclient, python3 kernel, no network)
	$(BIN)/python tools/run_notebook.py examples/explore.ipynb

.PHONY: notebook-outputs
notebook-outputs: dev ## Re-run examples/explore.ipynb and save its outputs (commit them)
	$(BIN)/python tools/run_notebook.py examples/explore.ipynb --write
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain take them.
FUZZ_TARGETS := contract tool_args globs paths
FUZZ_SECONDS ?= 15
.PHONY: fuzz
fuzz: ## Fuzz smoke: each cargo-fuzz target for FUZZ_SECONDS (15) s; corpus in fuzz/corpus/<target>/
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build -O
	cd fuzz && for t in $(FUZZ_TARGETS); do \
	  RUSTC_BOOTSTRAP=1 cargo fuzz run -O $$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 || exit 1; \
	done

# In the main target dir, so the dependencies `make lint` checked are reused (about 30 s then).
.PHONY: fuzz-check
fuzz-check: ## Compile the fuzz targets without libFuzzer (what CI checks; cheap)
	cargo check -q --manifest-path fuzz/Cargo.toml --no-default-features --bins \
	  --target-dir "$${CARGO_TARGET_DIR:-$(CURDIR)/target}"
