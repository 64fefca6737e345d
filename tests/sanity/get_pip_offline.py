# Copyright (c) dgx_spark.specdec contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline stand-in for the get-pip.py bootstrap script used by ansible-test.

ansible-test bootstraps pip into every sanity-test virtual environment by
downloading get-pip-<version>.py from ci-files.testing.ansible.com, which is not
reachable here.  It first looks for a cached copy at
~/.ansible/test/cache/get_pip_<version with underscores>.py, and
tests/sanity/run-sanity.sh installs this file there.

It runs ``python -m ensurepip --default-pip`` to get the pip bundled with the
interpreter, then ``python -m pip install --upgrade`` with the arguments
get-pip.py was given (for example ``pip==24.2``), minus get-pip's own options
``--no-setuptools`` and ``--no-wheel``.  The upgrade comes from PyPI or the
local indexes configured in pip.conf.
"""

from __future__ import annotations

import subprocess
import sys

GET_PIP_ONLY_OPTIONS = frozenset(('--no-setuptools', '--no-wheel'))


def main() -> int:
    """Bootstrap pip into the running interpreter's environment."""
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_OPTIONS]

    subprocess.run([sys.executable, '-m', 'ensurepip', '--default-pip'], check=True)

    if args:
        subprocess.run([sys.executable, '-m', 'pip', 'install', '--upgrade'] + args, check=True)

    return 0


if __name__ == '__main__':
    sys.exit(main())
