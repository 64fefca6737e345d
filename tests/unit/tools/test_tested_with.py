"""README's "Tested with" table agrees with what CI installs and runs (so it cannot drift)."""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _read(*path):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as fh:
        return fh.read()


def _pins():
    pins = {}
    for line in _read("requirements", "constraints.txt").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==", 1) if "==" in line else (line, "")
            assert version, f"constraints.txt pins exactly (==): {line}"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def _table():
    text = _read("README.md")
    section = text.split("\n## Tested with\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and not set(cells[0]) <= set("-") and cells[0] != "component":
            rows[cells[0]] = cells[1]
    return rows


def test_ansible_core_row_is_the_pinned_version():
    assert _table()["ansible-core"] == _pins()["ansible-core"]


def test_ansible_row_is_the_pinned_version():
    assert _table()["ansible (community package)"].split(",")[0] == _pins()["ansible"]


def test_python_row_is_the_interpreter_ci_runs():
    assert _table()["Python (controller)"] == "%d.%d" % sys.version_info[:2]


def test_every_requirement_is_pinned():
    pins = _pins()
    for name in ("runtime.txt", "test.txt"):
        for line in _read("requirements", name).splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-"):
                req = re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0]
                assert re.sub(r"[-_.]+", "-", req).lower() in pins, f"{name}: {req} has no pin in constraints.txt"
