"""scripts/build_collection.sh: the tarball holds git's tracked files only, minus galaxy.yml's build_ignore.

The build runs in a copy of the checkout's tracked files (a git repository of its own), where a run's leftovers
and a stray untracked file are planted first; none of them may reach the tarball.
"""
import os
import shutil
import subprocess
import tarfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "build_collection.sh")

# What a run, a test or a developer leaves in a working tree, untracked.
STRAY = [
    "tune-results/report.md",
    "changelogs/.plugin-cache.yaml",
    "stray-untracked.txt",
    "plugins/modules/stray_untracked.py",
    "roles/specdec_serve/tasks/stray_untracked.yml",
    "converge.log",
    "fabric-report.json",
]


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _tracked(cwd):
    return [p for p in _git(cwd, "ls-files", "-z", "--cached").split("\0") if p]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("git") is None or shutil.which("ansible-galaxy") is None:
        pytest.skip("needs git and ansible-galaxy")
    repo = tmp_path_factory.mktemp("checkout")
    for path in _tracked(ROOT):
        src = os.path.join(ROOT, path)
        if not os.path.lexists(src):
            continue  # deleted in the working tree, not yet committed
        dst = os.path.join(repo, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    # The script under test, whether or not it is committed yet.
    os.makedirs(repo / "scripts", exist_ok=True)
    shutil.copy2(SCRIPT, repo / "scripts" / "build_collection.sh")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    for path in STRAY:
        os.makedirs(os.path.dirname(repo / path) or repo, exist_ok=True)
        (repo / path).write_text("stray\n")
    out = tmp_path_factory.mktemp("out")
    result = subprocess.run(["bash", str(repo / "scripts" / "build_collection.sh"), str(out)], cwd=repo,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    tarball = result.stdout.strip().splitlines()[-1]
    assert os.path.dirname(tarball) == str(out)
    with tarfile.open(tarball) as tar:
        names = {m.name for m in tar.getmembers() if not m.isdir()}
    return repo, names


def test_no_untracked_or_run_output(built):
    names = built[1]
    for path in STRAY:
        assert path not in names, path
    assert not [n for n in names if n.startswith("tune-results/") or n.endswith((".log", ".pyc"))]
    assert not [n for n in names if n.endswith(".plugin-cache.yaml")]


def test_only_tracked_files(built):
    repo, names = built
    tracked = set(_tracked(repo))
    generated = {"MANIFEST.json", "FILES.json"}
    assert sorted(names - tracked - generated) == []


def test_build_ignore_applies(built):
    names = built[1]
    for prefix in ("tests/", "molecule/", "scripts/", "build/", "requirements/", "execution-environment/"):
        assert not [n for n in names if n.startswith(prefix)], prefix
    for name in ("requirements.txt", "Makefile", "galaxy.yml", "ansible.cfg", ".gitignore"):
        assert name not in names


def test_contents(built):
    repo, names = built
    wanted = {"CHANGELOG.rst", "README.md", "LICENSE", "meta/runtime.yml", "changelogs/changelog.yaml"}
    assert not wanted - names, f"missing (only tracked files are built: git add them): {sorted(wanted - names)}"
    modules = {p for p in _tracked(repo) if p.startswith("plugins/modules/") and p.endswith(".py")}
    assert modules and modules <= names
    roles = {p.split("/")[1] for p in _tracked(repo) if p.startswith("roles/")}
    assert roles
    for role in roles:
        assert f"roles/{role}/tasks/main.yml" in names, role
        assert f"roles/{role}/meta/argument_specs.yml" in names, role
