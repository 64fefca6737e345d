"""execution-environment/public/: the execution environment administrators build from a public base image, and the
repository's ansible-navigator.yml. Offline: ansible-builder renders the Containerfile (create) and reads the
collections' dependencies (introspect); nothing is pulled or built."""

import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLIC = os.path.join(ROOT, "execution-environment", "public")
DEFINITION = os.path.join(PUBLIC, "execution-environment.yml")
REQUIREMENTS = os.path.join(PUBLIC, "requirements.yml")
BIN = os.path.dirname(sys.executable)
SITE_COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(__import__("ansible").__file__)), "ansible_collections")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _tool(name):
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        pytest.skip("%s is not installed in the venv" % name)
    return path


def _used_collections():
    """The collections the roles, playbooks and plugins call by FQCN (not ansible.builtin, not this one)."""
    used = set()
    for top in ("roles", "playbooks", "plugins"):
        for root, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".yml", ".yaml", ".py", ".j2")):
                    with open(os.path.join(root, name), encoding="utf-8") as handle:
                        text = handle.read()
                    used |= set(re.findall(r"^\s*-?\s*((?!ansible\.builtin)[a-z_]+\.[a-z_]+)\.[a-z_]+:", text, re.M))
    return {c for c in used if c != "dgx_spark.specdec" and c.split(".")[0] in ("community", "ansible", "awx")}


def test_the_requirements_cover_the_collection_and_what_it_calls():
    wanted = {c["name"]: c for c in _load(REQUIREMENTS)["collections"]}
    # The collection itself, from its repository.
    galaxy = _load(os.path.join(ROOT, "galaxy.yml"))
    assert any(c.get("type") == "git" and c["name"].rstrip("/").endswith(galaxy["repository"].split("/")[-1] + ".git")
               for c in wanted.values()), wanted
    # Its galaxy.yml dependencies and collections/requirements.yml, with the same version ranges.
    for name, version in (galaxy.get("dependencies") or {}).items():
        assert wanted[name]["version"] == version, name
    for entry in _load(os.path.join(ROOT, "collections", "requirements.yml"))["collections"]:
        assert wanted[entry["name"]]["version"] == entry["version"], entry
    # Every collection a role or playbook calls (ansible.posix: netplan_qsfp's sysctl).
    missing = _used_collections() - set(wanted)
    assert not missing, "called but not in %s: %s" % (REQUIREMENTS, sorted(missing))


def test_ansible_builder_renders_the_containerfile(tmp_path):
    builder = _tool("ansible-builder")
    definition = _load(DEFINITION)
    assert definition["version"] == 3
    context = tmp_path / "context"
    proc = subprocess.run([builder, "create", "--file", DEFINITION, "--context", str(context),
                           "--output-filename", "Containerfile"], capture_output=True, text=True, check=False,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text()
    base = definition["images"]["base_image"]["name"]
    assert base.startswith("ghcr.io/ansible-community/community-ee-base") and base in containerfile
    # ansible-core and ansible-runner installed over the base, at the ranges the collection supports.
    assert re.search(r'ANSIBLE_INSTALL_REFS="ansible-core>=2\.17[^"]* ansible-runner', containerfile), containerfile
    # The collections from the requirements file, copied into the context unchanged.
    assert _load(context / "_build" / "requirements.yml") == _load(REQUIREMENTS)
    assert "ansible-galaxy collection install" in containerfile and "-r requirements.yml" in containerfile
    # git for the collection's git source, in the galaxy stage; the collections' bindep and pip requirements are
    # read in the builder stage (introspect) and installed in the final one.
    galaxy_stage = containerfile.split("FROM base AS galaxy", 1)[1].split("FROM base AS builder", 1)[0]
    assert "install -y git-core" in galaxy_stage
    assert "introspect.py introspect" in containerfile and "install-from-bindep" in containerfile
    assert containerfile.rstrip().endswith('CMD ["bash"]')


def test_ansible_builder_introspect_finds_the_collections_requirements(tmp_path):
    """introspect --sanitize over the collections the EE installs: this checkout as dgx_spark.specdec, the venv's
    community.docker and ansible.posix. No error; the collection's own pip and bindep requirements are there."""
    builder = _tool("ansible-builder")
    tree = tmp_path / "collections" / "ansible_collections"
    (tree / "dgx_spark").mkdir(parents=True)
    os.symlink(ROOT, tree / "dgx_spark" / "specdec")
    for fqcn in ("community.docker", "ansible.posix"):
        namespace, name = fqcn.split(".")
        source = os.path.join(SITE_COLLECTIONS, namespace, name)
        if not os.path.isdir(source):
            pytest.skip("%s is not in the venv's ansible package" % fqcn)
        (tree / namespace).mkdir(exist_ok=True)
        os.symlink(source, tree / namespace / name)
    proc = subprocess.run([builder, "introspect", "--sanitize", str(tmp_path / "collections")], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stderr.lower(), proc.stderr
    found = yaml.safe_load(proc.stdout)
    python = " ".join(found["python"])
    system = " ".join(found["system"])
    with open(os.path.join(ROOT, "meta", "ee-requirements.txt"), encoding="utf-8") as handle:
        own = [re.split(r"[<>=!~\[; #]", line.strip(), maxsplit=1)[0] for line in handle
               if line.strip() and not line.startswith("#")]
    for requirement in own:
        assert "%s  # from collection dgx_spark.specdec" % requirement in python or requirement in python, requirement
    assert "docker  # from collection community.docker" in python
    assert "from collection dgx_spark.specdec" in system


def test_the_offline_definition_is_a_different_file():
    """The lab's offline EE (scripts/ee.sh) keeps its own definition; the public one does not refer to build/."""
    offline = _load(os.path.join(ROOT, "execution-environment", "execution-environment.yml"))
    public = _load(DEFINITION)
    assert offline["images"]["base_image"]["name"] != public["images"]["base_image"]["name"]
    with open(DEFINITION, encoding="utf-8") as handle:
        assert "build/ee" not in handle.read()


def test_ansible_navigator_settings_are_valid(tmp_path):
    """ansible-navigator.yml: its own settings check (settings --effective), the EE and the token handling."""
    settings = _load(os.path.join(ROOT, "ansible-navigator.yml"))["ansible-navigator"]
    ee = settings["execution-environment"]
    assert ee["image"] == "local/dgx-spark-specdec-ee:latest" and ee["pull"]["policy"] == "missing"
    assert "HF_TOKEN_FILE" in ee["environment-variables"]["pass"]
    assert "HF_TOKEN" not in ee["environment-variables"]["pass"]
    assert "HF_TOKEN" not in ee["environment-variables"].get("set", {})
    assert settings["mode"] == "stdout" and settings["playbook-artifact"]["save-as"].startswith("build/navigator/")
    navigator = _tool("ansible-navigator")
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), ANSIBLE_NAVIGATOR_CONFIG=os.path.join(ROOT, "ansible-navigator.yml"))
    env.pop("ANSIBLE_CONFIG", None)
    # --ee false: no container engine is needed to check the settings; the log goes to tmp.
    proc = subprocess.run([navigator, "settings", "--effective", "--mode", "stdout", "--ee", "false",
                           "--log-file", str(tmp_path / "navigator.log")], capture_output=True, text=True,
                          env=env, cwd=ROOT, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Error" not in proc.stdout and "Issues were found" not in proc.stdout, proc.stdout[-3000:]
    effective = yaml.safe_load(proc.stdout)["ansible-navigator"]
    assert effective["execution-environment"]["environment-variables"]["pass"] == ee["environment-variables"]["pass"]
    assert effective["playbook-artifact"]["save-as"] == settings["playbook-artifact"]["save-as"]
