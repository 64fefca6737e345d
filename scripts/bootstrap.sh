#!/usr/bin/env bash
# Create .venv (reused when present), install requirements/test.txt (which includes runtime.txt) at the versions of
# requirements/constraints.txt when any of them changed, and make the
# checkout importable by Ansible as dgx_spark.specdec through .collections/.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

# Debian's python3 (not a pyenv shim) so the venv works the same for every user.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PYTHON" -m venv --help >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
    echo "bootstrap: installing python3-venv"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
  echo "bootstrap: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi

# The stamp is one hash over every requirements file (names and contents), so a change to any of them reinstalls.
stamp="$VENV/.requirements.sha256"
want=$(sha256sum requirements/runtime.txt requirements/test.txt requirements/constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing requirements/test.txt (pinned by requirements/constraints.txt) into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r requirements/test.txt -c requirements/constraints.txt
  echo "$want" > "$stamp"
fi

link=.collections/ansible_collections/dgx_spark/specdec
if [ ! -L "$link" ]; then
  mkdir -p "$(dirname "$link")"
  ln -sfn ../../.. "$link"
fi
