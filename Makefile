# Two commands for a fresh Debian 12 machine (as root):
#   make demo   bring up the simulated two-Spark lab and serve Qwen3-235B EAGLE-3 with TP=2 on it
#   make test   run every test: unit, lab, lint, sanity, the molecule scenarios, the EE and the fleet
#   make fleet-demo   a fleet of 2 pairs + 1 single, run twice the way AWX runs a job
# Both create .venv/ (reused when present) and start Docker when a step needs it. Safe to re-run.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
VENV ?= .venv

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
export ANSIBLE_FORCE_COLOR ?= 0
export PY_COLORS ?= 0

.PHONY: demo test bench venv docker ee fleet-demo unit lab-test lint sanity molecule molecule-fabrics monitoring lab-up lab-down clean docs build

demo: venv docker
	scripts/demo.sh

test: venv docker
	scripts/test.sh

# A benchmark (not a timed test): first converge and no-op re-run of the two-Spark playbook, then of
# playbooks/fleet.yml on fleets of 2, 5 and 10 nodes (the 5-node one also through the EE), then the tuner;
# the figures go to build/bench.json (BENCH_ONLY=scaling: the fleets alone).
bench: venv docker ee
	scripts/bench.sh

# The execution environment image (ansible-builder, no registry or Galaxy): local/dgx-spark-specdec-ee.
ee: venv docker
	scripts/ee.sh

# AWX-shaped: a lab of 2 pairs + 1 single, playbooks/fleet.yml twice through ansible-runner in the EE.
fleet-demo: ee
	python scripts/fleet_runner.py demo

venv:
	@scripts/bootstrap.sh

# The collection tarball (build/dgx_spark-specdec-<version>.tar.gz) from git's tracked files only: the working
# tree's content of every tracked file, never an untracked one. BUILD_FROM=head builds the committed HEAD instead.
build: venv
	scripts/build_collection.sh $(if $(filter head,$(BUILD_FROM)),--head)

docker:
	@scripts/ensure_docker.sh

# Everything documented about the inputs, from the input catalogue (plugins/module_utils/_inputs.py): each role's
# argument_specs.yml and defaults/main.yml, the README variable tables, the plan module's list of variables.
docs: venv
	python tools/gen_docs.py

# Single stages, for development.
unit: venv
	python -m pytest tests/unit -q

lab-test: venv docker
	python -m pytest tests/lab -q

lint: venv
	python tools/gen_docs.py --check
	yamllint -s .
	HOME=$(CURDIR)/build/lint-home ansible-lint
	antsibull-changelog lint
	antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
	antsibull-docs lint-collection-docs --plugin-docs .

sanity: venv
	tests/sanity/run-sanity.sh

molecule: venv docker
	molecule test --all

molecule-fabrics: venv docker
	STAGES=molecule-fabrics scripts/test.sh

# Prometheus and the dashboard: promtool's tests, then a served fleet scraped by the monitoring role (about 4 min).
monitoring: venv docker
	STAGES=monitoring scripts/test.sh

lab-up: venv docker
	molecule/resources/lab/lab up

lab-down: docker
	molecule/resources/lab/lab down

clean: lab-down
	rm -rf build .collections .pytest_cache
