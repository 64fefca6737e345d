"""The execution environment's inputs: meta/execution-environment.yml (what the collection needs in
any EE) and execution-environment/execution-environment.yml (the ansible-builder v3 definition that
scripts/ee.sh builds). No network, no docker."""

import ast
import os
import re
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
META = os.path.join(ROOT, "meta", "execution-environment.yml")
DEFINITION = os.path.join(ROOT, "execution-environment", "execution-environment.yml")

# Importable in every EE: ansible-core and what it depends on.
ANSIBLE_CORE_IMPORTS = {"ansible", "ansible_collections", "jinja2", "yaml", "cryptography", "packaging",
                        "resolvelib", "markupsafe"}


def _load(path):
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _requirement_lines(path):
    """Non-empty lines of a pip or bindep file, comments removed."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        lines = (re.sub(r"(^|\s)#.*", "", line).strip() for line in fh)
        return [line for line in lines if line]


@pytest.fixture(scope="module")
def meta():
    return _load(META)


@pytest.fixture(scope="module")
def definition():
    return _load(DEFINITION)


def test_meta_points_at_existing_files(meta):
    assert meta["version"] in (1, 3)
    assert set(meta["dependencies"]) == {"python", "system"}
    for path in meta["dependencies"].values():
        assert os.path.isfile(os.path.join(ROOT, path)), path


def test_meta_python_requirements_have_no_pins(meta):
    for line in _requirement_lines(meta["dependencies"]["python"]):
        assert not re.search(r"[<>=!~@;]", line), f"pinned or conditional requirement: {line}"


def test_meta_bindep_has_the_ssh_client_and_no_pins(meta):
    lines = _requirement_lines(meta["dependencies"]["system"])
    for line in lines:
        outside_profiles = re.sub(r"\[[^]]*\]", "", line)
        assert not re.search(r"[<>=!]", outside_profiles), f"pinned system package: {line}"
    assert "openssh-client [platform:dpkg]" in lines
    assert "openssh-clients [platform:rpm]" in lines


# Modules the playbooks run on the controller (delegate_to: localhost): under AWX that is the EE.
CONTROLLER_MODULES = {"specdec_tune.py"}


def _controller_side_imports():
    """Top-level packages imported by every plugin that runs on the controller (modules run on the nodes, except
    CONTROLLER_MODULES), at load or inside a function."""
    imports = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "plugins")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            if os.path.basename(dirpath) == "modules" and name not in CONTROLLER_MODULES:
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for module in names:
                    imports.setdefault(module.split(".")[0], os.path.relpath(path, ROOT))
    return imports


def test_controller_side_imports_are_in_the_ee(meta):
    listed = {re.split(r"[\s\[]", line)[0].lower().replace("-", "_")
              for line in _requirement_lines(meta["dependencies"]["python"])}
    missing = {module: path for module, path in _controller_side_imports().items()
               if module not in sys.stdlib_module_names and module not in ANSIBLE_CORE_IMPORTS
               and module.lower() not in listed}
    assert not missing, f"add to {meta['dependencies']['python']}: {missing}"


def test_the_tuner_s_plotting_library_is_in_the_ee(meta):
    """playbooks/tune_draft_len.yml runs specdec_tune on the controller: matplotlib must be in every EE built with the
    collection, unpinned, and the import scan must see it."""
    lines = _requirement_lines(meta["dependencies"]["python"])
    assert "matplotlib" in lines
    assert _controller_side_imports().get("matplotlib") == os.path.join("plugins", "modules", "specdec_tune.py")
    with open(os.path.join(ROOT, "playbooks", "tune_draft_len.yml"), encoding="utf-8") as fh:
        tasks = yaml.safe_load(fh)[0]["tasks"]
    tuner = [t for t in tasks if "dgx_spark.specdec.specdec_tune" in t]
    assert tuner and all(t.get("delegate_to") == "localhost" for t in tuner)


def test_ee_build_checks_the_collection_requirements_reach_the_image():
    """scripts/ee.sh: every line of meta/ee-requirements.txt must be in the wheelhouse, and matplotlib import in the image."""
    with open(os.path.join(ROOT, "scripts", "ee.sh"), encoding="utf-8") as fh:
        script = fh.read()
    assert "meta/ee-requirements.txt) is not in the wheelhouse requirements" in script
    assert "from matplotlib import pyplot" in script


def test_builder_definition(definition):
    assert definition["version"] == 3
    assert definition["images"]["base_image"]["name"].startswith("local/")
    deps = definition["dependencies"]
    assert deps["ansible_core"] == {"package_pip": "ansible-core"}
    assert deps["ansible_runner"] == {"package_pip": "ansible-runner"}
    assert "--offline" in definition["build_arg_defaults"]["ANSIBLE_GALAXY_CLI_COLLECTION_OPTS"]
    options = definition["options"]
    assert options["package_manager_path"] == "/usr/bin/apt-get"
    assert options["skip_pip_install"] is True


def test_builder_definition_files_exist(definition):
    """Inputs kept in execution-environment/ exist; the rest is staged by scripts/ee.sh under build/ee/."""
    here = os.path.dirname(DEFINITION)
    paths = [definition["dependencies"]["galaxy"]] + [entry["src"] for entry in definition["additional_build_files"]]
    for path in paths:
        full = os.path.normpath(os.path.join(here, path))
        generated = os.path.join(ROOT, "build", "ee") + os.sep
        assert full.startswith(generated) or os.path.exists(full), path
    assert os.access(os.path.join(ROOT, "scripts", "ee.sh"), os.X_OK)


def test_builder_definition_is_valid_for_ansible_builder(definition):
    ee_schema = pytest.importorskip("ansible_builder.ee_schema")
    ee_schema.validate_schema(definition)
