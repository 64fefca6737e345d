#!/usr/bin/env bash
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Exercise dgx_spark.specdec.specdec_endpoint through ansible-playbook against the
# loopback fake trtllm-serve. Works under `ansible-test integration` and directly:
#   ANSIBLE_COLLECTIONS_PATH=<repo>/.collections tests/integration/targets/specdec_endpoint/runme.sh
set -eux

cd "$(dirname "${BASH_SOURCE[0]}")"
ansible-playbook -i inventory.ini playbook.yml "$@"
