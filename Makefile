# agent_bringup developer entry points. `make test` is the one test command (.ci/run calls it).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV ?= .venv
PY := $(VENV)/bin/python
COLCON_ARGS ?=

# MuJoCo's GL backend (egl, osmesa, glfw): passed through only when you set it; never forced here.
ifneq ($(origin MUJOCO_GL),undefined)
export MUJOCO_GL
endif

.PHONY: help setup agents test test-long demo graph bench lint docs isaac-check colcon urdf tasks-table clean

help:
	@echo "make setup   Debian packages, .venv, project (editable) and ROS 2 wheels (scripts/setup_env.sh)"
	@echo "make agents  the coding-agent CLIs from npm (Codex, opencode, Claude Code) into .venv/agents/npm (scripts/install_agents.sh)"
	@echo "make test    pytest over test/ in timed stages (scripts/run_tests.sh; PYTEST_ARGS='-k foo' narrows)"
	@echo "make test-long  the tests marked long: calibration sessions and agent episodes on the emulated rigs"
	@echo "make demo    robodojo demo --out out/demo"
	@echo "make graph   the ROS 2 graph (simulator, motion server, agent nodes) as processes: robodojo graph"
	@echo "make bench   run every benchmarks/*.py"
	@echo "make lint    ruff check, ruff format --check and mypy (what CI runs besides the tests)"
	@echo "make docs    the documentation site (mkdocs.yml, docs/) into site/, strict: a broken link fails it"
	@echo "make isaac-check  the Isaac Sim runner's API calls against the pinned Isaac Sim 6.2 wheels (258 MB, fetched once)"
	@echo "make colcon  colcon build of the ROS package (build/ install/ log/); COLCON_ARGS passes options"
	@echo "make tasks-table  render a head-camera image per task and rewrite the README's task table"
	@echo "make urdf    regenerate the scene URDFs, the MoveIt config and the RViz configs (scripts/generate_*.py)"
	@echo "make clean   remove build/ install/ log/ out/ and caches (keeps .venv)"

setup:
	@bash scripts/setup_env.sh

agents:
	@VENV=$(VENV) bash scripts/install_agents.sh

# The stages, their order and what runs beside what: scripts/run_tests.sh (PYTEST_ARGS, TEST_JOBS, ROS_JOBS pass
# through the environment).
test: setup agents
	@PY=$(PY) bash scripts/run_tests.sh

test-long: setup agents
	@PY=$(PY) TEST_TIER=long bash scripts/run_tests.sh

demo: setup
	$(VENV)/bin/robodojo demo --out out/demo
	$(VENV)/bin/robodojo run --task general_pickup --seed 0 --agent move_eef \
	  --llm replay:examples/replay/general_pickup_seed0.yaml --out out/demo/episodes
	$(VENV)/bin/robodojo run --task general_pickup --seed 0 --agent code_cell \
	  --llm replay:examples/cells/general_pickup.py --out out/demo/episodes
	$(VENV)/bin/robodojo run --task general_pickup --seed 0 --agent shell \
	  --llm replay:examples/shell/general_pickup.yaml --out out/demo/episodes

graph: setup
	$(VENV)/bin/robodojo graph

tasks-table: setup
	$(PY) scripts/task_table.py

bench: setup
	@shopt -s nullglob; failed=(); files=(benchmarks/[!_]*.py); \
	if (( $${#files[@]} == 0 )); then echo "no benchmarks in benchmarks/"; exit 0; fi; \
	for f in "$${files[@]}"; do \
	  echo "=== $$f"; \
	  $(PY) "$$f" || failed+=("$$f"); \
	done; \
	if (( $${#failed[@]} )); then echo "failed: $${failed[*]}" >&2; exit 1; fi

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The documentation site: MkDocs with Material and mkdocstrings, pinned in docs/requirements.txt and installed into the
# venv when that file is newer than the venv's stamp. --strict fails on a broken link, anchor, snippet or API reference.
# The build reads nothing from the network (mkdocs.yml: theme.font false). NO_MKDOCS_2_WARNING silences the banner
# Material 9.7 and later print on every build about their end of life and successor.
DOCS_STAMP := $(VENV)/.docs-stamp
$(DOCS_STAMP): docs/requirements.txt | setup
	$(PY) -m pip install -q -r docs/requirements.txt 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
	touch $@

docs: setup $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# The Isaac Sim runner's API contract (scripts/isaac_contract.py): its names, signatures, keyword choices and OmniGraph
# attributes against the Isaac Sim 6.2 wheels pinned in scripts/isaac-wheels.txt, read as zip files. pip fetches them
# once into ISAAC_WHEELS (258 MB; kept while their sha256 match); with the registry out of reach and nothing cached it
# prints one line and succeeds.
ISAAC_WHEELS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/robodojo/isaac-wheels
isaac-check: setup
	$(PY) scripts/isaac_contract.py --download --wheels "$(ISAAC_WHEELS)"

# The ROS wheels need AMENT_PREFIX_PATH (and PATH) pointing at the venv; a sourced ROS install keeps its own.
# The venv already has robodojo (editable), so the install gets only the interfaces and node launchers.
colcon: setup
	@export VIRTUAL_ENV="$(abspath $(VENV))"; export PATH="$$VIRTUAL_ENV/bin:$$PATH"; \
	if [[ -d "$$VIRTUAL_ENV/share/ament_index" ]]; then \
	  export AMENT_PREFIX_PATH="$$VIRTUAL_ENV$${AMENT_PREFIX_PATH:+:$$AMENT_PREFIX_PATH}"; \
	fi; \
	set -x; colcon build $(COLCON_ARGS) --symlink-install --cmake-args -DINSTALL_ROBODOJO=OFF

urdf: setup
	$(PY) scripts/generate_urdf.py
	$(PY) scripts/generate_srdf.py
	$(PY) scripts/generate_rviz.py

clean:
	rm -rf build install log out site .pytest_cache .ruff_cache
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
