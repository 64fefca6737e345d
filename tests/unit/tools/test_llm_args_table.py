# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""tools/llm_args_table.py on source written for these tests in the style of a release's llm_args.py."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_SPEC = importlib.util.spec_from_file_location("llm_args_table", os.path.join(ROOT, "tools", "llm_args_table.py"))
gen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gen)

# Written for this test: the constructs a release's llm_args.py uses, none of its code.
SOURCE = '''
from typing import Annotated, ClassVar, Dict, List, Literal, Optional, Union
from pydantic import AliasChoices, BaseModel, Field, PositiveInt, PrivateAttr


class StrictBaseModel(BaseModel):
    class Config:
        extra = "forbid"


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Mode(Enum):
    FAST = 0
    SLOW = 1


class PaintConfig(StrictBaseModel):
    """Docstrings are ignored."""
    colour: Colour = Colour.RED
    coats: PositiveInt = Field(default=2, description="how many")
    ratio: Optional[float] = Field(default=None, ge=0, le=1)
    window: Annotated[int, Field(gt=0)] = 8
    names: List[str] = Field(default_factory=list)
    _cache: dict = PrivateAttr(default_factory=dict)
    VERSION: ClassVar[int] = 3


class LooseConfig(BaseModel):
    anything: Dict[str, int] = {}


class BaseDecoding(StrictBaseModel):
    max_len: Optional[int] = Field(default=None, ge=0)
    model: Optional[str] = Field(default=None, validation_alias=AliasChoices("model", "model_dir"))

    @classmethod
    def from_dict(cls, data: dict):
        classes = {"Fast": FastDecoding, "Slow": SlowDecoding}
        return classes[data.pop("decoding_type")](**data)

    def supports_backend(self, backend: str) -> bool:
        return True


class FastDecoding(BaseDecoding):
    decoding_type: Literal["Fast"] = "Fast"
    width: int

    def supports_backend(self, backend: str) -> bool:
        return backend not in ("pytorch", "_autodeploy")


class SlowDecoding(BaseDecoding):
    decoding_type: Literal["Slow_Tag"] = "Slow_Tag"
    depth: "Mode" = Mode.SLOW


SpeculativeConfig = Annotated[Union[FastDecoding, SlowDecoding], Field(discriminator="decoding_type")]


class BaseArgs(StrictBaseModel):
    model: str = Field(description="required")
    paint: PaintConfig = Field(default_factory=PaintConfig)
    loose: Optional[LooseConfig] = None
    size: int | None = None


class TorchLlmArgs(BaseArgs):
    speculative_config: Optional[SpeculativeConfig] = None
    size: Optional[int] = Field(default=4, gt=0)
    policy: Literal["a", "b"] = "a"
    schedule: Optional[Dict[int, int]] = None
    helper: Optional[SomethingImported] = None
'''


@pytest.fixture(name="table")
def fixture_table():
    return gen.build_table(SOURCE, "9.9.9", "the test source")


def test_fields_types_defaults_bounds_and_extra(table):
    paint = table["models"]["PaintConfig"]
    assert paint["extra"] == "forbid"
    fields = paint["fields"]
    assert list(fields) == ["colour", "coats", "ratio", "window", "names"]  # no private or class vars
    assert fields["colour"] == {"type": ["enum", "Colour"], "default": {"expr": "Colour.RED"}}
    assert fields["coats"] == {"type": ["int"], "default": 2, "gt": 0}
    assert fields["ratio"] == {"type": ["union", ["float"], ["none"]], "default": None, "ge": 0, "le": 1}
    assert fields["window"] == {"type": ["int"], "default": 8, "gt": 0}
    assert fields["names"] == {"type": ["list", ["str"]], "default": {"factory": "list"}}
    assert table["enums"] == {"Colour": ["red", "blue"], "Mode": [0, 1]}
    assert table["models"]["LooseConfig"]["extra"] == "ignore"


def test_inheritance_order_redefinition_and_required(table):
    assert table["models"]["TorchLlmArgs"]["bases"] == ["BaseArgs"]
    assert list(table["models"]["TorchLlmArgs"]["fields"]) == ["speculative_config", "size", "policy", "schedule", "helper"]
    top = gen.resolved_fields(table, "TorchLlmArgs")
    assert list(top) == ["model", "paint", "loose", "size", "speculative_config", "policy", "schedule", "helper"]
    assert top["model"] == {"type": ["str"], "required": True}
    assert top["size"]["gt"] == 0 and top["size"]["default"] == 4
    assert top["policy"]["type"] == ["literal", "a", "b"]
    assert top["schedule"]["type"] == ["union", ["dict", ["int"], ["int"]], ["none"]]
    assert top["helper"]["type"] == ["union", ["any", "SomethingImported"], ["none"]]
    assert table["models"]["FastDecoding"]["fields"]["width"]["required"] is True
    assert "max_len" not in table["models"]["FastDecoding"]["fields"]  # inherited, kept once on BaseDecoding
    assert "max_len" in gen.resolved_fields(table, "FastDecoding")


def test_decoding_types_aliases_and_backends(table):
    assert table["decoding_tags"] == {"Fast": "FastDecoding", "Slow_Tag": "SlowDecoding"}
    assert table["decoding_dispatch"] == {"Fast": "FastDecoding", "Slow": "SlowDecoding"}
    slow = table["models"]["SlowDecoding"]
    assert gen.resolved_fields(table, "SlowDecoding")["model"]["aliases"] == ["model", "model_dir"]
    assert slow["fields"]["depth"]["type"] == ["enum", "Mode"]  # a forward reference in quotes
    assert slow["pytorch"] is True
    assert table["models"]["FastDecoding"]["pytorch"] is False


def test_the_rendered_documentation_page_gives_the_same_table(tmp_path, table):
    pygments = pytest.importorskip("pygments")
    from pygments.formatters import HtmlFormatter  # pylint: disable=import-outside-toplevel
    from pygments.lexers import PythonLexer  # pylint: disable=import-outside-toplevel

    page = tmp_path / "llm_args.html"
    page.write_text("<!DOCTYPE html><html><body><h1>Source code</h1>%s</body></html>"
                    % pygments.highlight(SOURCE, PythonLexer(), HtmlFormatter()), encoding="utf-8")
    source, origin = gen.read_source(str(page))
    assert "rendered page" in origin
    assert gen.build_table(source, "9.9.9", "the test source") == table


def test_documented_methods_keep_their_class_body():
    """Sphinx viewcode puts a "[docs]" back-link before each documented method, inside the highlighted block."""
    page = ('<div class="highlight"><pre><span></span><span class="k">class</span> <span class="nc">A</span>'
            '<span class="p">:</span>\n    <span class="n">x</span><span class="p">:</span> <span class="nb">int</span>\n\n'
            '<div class="viewcode-block" id="A.check">\n<a class="viewcode-back" href="../x.html#A.check">[docs]</a>\n'
            '    <span class="k">def</span> <span class="nf">check</span><span class="p">(</span><span class="bp">self'
            '</span><span class="p">):</span>\n        <span class="k">return</span> <span class="kc">None</span>'
            '</div>\n</pre></div>')
    source = gen.source_from_html(page)
    assert "[docs]" not in source and ast.parse(source).body[0].name == "A"


def test_the_written_module_is_data_that_imports(tmp_path, table):
    path = gen.output_path("9.9.9rc1", str(tmp_path))
    assert path.endswith("_trtllm_release_9_9_9rc1.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(gen.module_text(table))
    spec = importlib.util.spec_from_file_location("written", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.TABLE == table


def test_command_line_reports_what_it_wrote_and_refuses_other_files(tmp_path):
    source = tmp_path / "llm_args.py"
    source.write_text(SOURCE, encoding="utf-8")
    tool = os.path.join(ROOT, "tools", "llm_args_table.py")
    proc = subprocess.run([sys.executable, tool, "9.9.9", "--source", str(source), "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "_trtllm_release_9_9_9.py: 8 models, 2 enums, 3 decoding types" in proc.stdout
    other = tmp_path / "other.py"
    other.write_text("x = 1\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, tool, "9.9.9", "--source", str(other), "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "class TorchLlmArgs not found" in proc.stderr


def test_the_shipped_tables_are_what_the_tool_writes():
    # Every shipped table is the tool's output format: regenerating from the same source gives the same bytes.
    sys.path.insert(0, os.path.join(ROOT, "plugins", "module_utils"))
    try:
        for name in sorted(os.listdir(os.path.join(ROOT, "plugins", "module_utils"))):
            if name.startswith("_trtllm_release_"):
                module = importlib.import_module(name[:-3])
                with open(os.path.join(ROOT, "plugins", "module_utils", name), encoding="utf-8") as handle:
                    assert handle.read() == gen.module_text(module.TABLE), name
    finally:
        sys.path.pop(0)


def test_compare_lists_what_a_release_adds_drops_and_changes(tmp_path, table):
    newer = gen.build_table(SOURCE.replace('    policy: Literal["a", "b"] = "a"\n', '    policy: Literal["a"] = "a"\n')
                            .replace("    window: Annotated[int, Field(gt=0)] = 8\n", "    extra_window: int = 8\n")
                            .replace('"Slow_Tag"', '"Slow"'), "9.9.10", "newer")
    lines = gen.compare(table, newer)
    assert "- decoding_type Slow_Tag" in lines and "- PaintConfig.window" in lines
    assert '+ PaintConfig.extra_window {"type": ["int"], "default": 8}' in lines
    assert any(line.startswith("~ TorchLlmArgs.policy") for line in lines)
    with open(gen.output_path("9.9.9", str(tmp_path)), "w", encoding="utf-8") as handle:
        handle.write(gen.module_text(table))
    assert gen.load_table("9.9.9", str(tmp_path)) == table


def test_an_installed_package_is_read_without_importing_it(tmp_path):
    package = tmp_path / "site" / "tensorrt_llm"
    (package / "llmapi").mkdir(parents=True)
    # Importing this package would fail: the tool must only find and read it.
    (package / "__init__.py").write_text("raise ImportError('no GPU here')\n", encoding="utf-8")
    (package / "llmapi" / "llm_args.py").write_text(SOURCE, encoding="utf-8")
    tool = os.path.join(ROOT, "tools", "llm_args_table.py")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    proc = subprocess.run([sys.executable, tool, "9.9.9", "--package", "--json"], capture_output=True, text=True,
                          check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    table = json.loads(proc.stdout)
    assert table["source"].startswith("installed package ") and table["source"].endswith("llm_args.py")
    assert "PaintConfig" in table["models"]
