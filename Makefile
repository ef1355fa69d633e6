# gpu-platform: every entry point a person or CI needs. `make demo` and `make test` set
# themselves up on a fresh Debian 12 machine (apt packages when run as root, .venv, pip pins).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help setup system-deps demo plan capacity render check check-all lint test test-python test-ansible bench lock clean .venv-checkov

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

$(BIN)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

setup: $(BIN)/.installed  ## create .venv with every pinned Python dependency

# checkov (peer check of rendered manifests) lives in its own venv: its pins conflict with .venv.
.venv-checkov/.installed: requirements-checkov.txt
	$(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/pip install --quiet --upgrade pip
	.venv-checkov/bin/pip install --quiet -r requirements-checkov.txt
	touch $@

.venv-checkov: .venv-checkov/.installed  ## checkov in its own virtualenv

system-deps:  ## apt packages the full test suite needs (promtool, podman, runc, debootstrap, packer)
	scripts/system-deps.sh

demo: setup  ## print the offline plan and capacity report of the default stack
	$(BIN)/gpu-platform plan --stack $(STACK)
	@echo
	$(BIN)/gpu-platform capacity --stack $(STACK)

plan: setup  ## offline plan of STACK (default dev)
	$(BIN)/gpu-platform plan --stack $(STACK)

render: setup  ## write STACK's manifests and Helm values to out/STACK
	$(BIN)/gpu-platform render --stack $(STACK) --out out/$(STACK)

check: setup  ## policy gate over STACK (exit 1 on a mandatory violation)
	$(BIN)/gpu-platform check --stack $(STACK)

check-all: setup  ## policy gate over every stack in stacks/
	for f in stacks/Pulumi.*.yaml; do $(BIN)/gpu-platform check --config $$f || exit 1; done

capacity: setup  ## capacity, coverage, Spot exposure and cost of STACK
	$(BIN)/gpu-platform capacity --stack $(STACK)

lint: setup system-deps  ## ruff, mypy, yamllint; ansible-lint (production profile), playbook syntax, packer validate
	$(BIN)/ruff check infra policies tests benchmarks
	$(BIN)/ruff format --check infra policies tests benchmarks
	$(BIN)/mypy
	$(BIN)/yamllint -s .
	ansible/scripts/lint.sh

test-python: setup system-deps .venv-checkov  ## the pytest suite
	scripts/fetch-helm.sh
	$(BIN)/pytest -q -n 2 tests

test-ansible: setup system-deps  ## Molecule: converge, idempotence and verify in Debian 12 podman containers
	ansible/scripts/molecule-test.sh

test: setup system-deps lint test-python test-ansible  ## everything CI runs

bench: setup  ## benchmark scripts (print figures; they never fail on timing)
	$(BIN)/python benchmarks/plan_bench.py
	$(BIN)/python benchmarks/render_bench.py
	$(BIN)/python benchmarks/check_bench.py
	ansible/scripts/benchmark-converge.sh

lock:  ## re-resolve requirements.in and checkov into fully pinned requirements files
	scripts/lock.sh

clean:  ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
