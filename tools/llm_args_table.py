# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generate a TensorRT-LLM release's option field table from its ``tensorrt_llm/llmapi/llm_args.py``.

The source is read with ``ast`` only: nothing is imported, no GPU or TensorRT-LLM install is needed.
It can come from

  * a file:           tools/llm_args_table.py 1.3.0rc13 --source path/to/llm_args.py
  * the rendered documentation page of the release (Sphinx "viewcode", Pygments HTML), saved with
                      curl -o llm_args.html https://nvidia.github.io/TensorRT-LLM/1.3.0rc13/_modules/tensorrt_llm/llmapi/llm_args.html
                      tools/llm_args_table.py 1.3.0rc13 --source llm_args.html
  * an installed package (the Python that runs this script): --package
  * a release image:  --image nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc13   (docker create + docker cp)

and the table is written as ``plugins/module_utils/_trtllm_release_<version>.py`` (a Python literal, so
Ansible ships it to targets with the modules that use it). Review the diff, then register the module in
``_trtllm_options.py`` (RELEASE_TABLES) with the release's hand-written rules.

What the table holds, per pydantic model class of the file: its fields (inherited ones included, in
pydantic's order), each with its type, default, whether it is required, its aliases and numeric bounds
(``ge``/``gt``/``le``/``lt`` of ``Field`` or ``Annotated``), ``Literal`` choices, enums with their
values, and whether extra keys are forbidden; plus the ``decoding_type`` tags of the speculative
decoding configs (from ``Literal`` tags, and from a ``from_dict`` mapping where the release has one).

Types are written as small lists: ["int"], ["float"], ["bool"], ["str"], ["any"], ["none"],
["literal", v...], ["list", T], ["dict", K, V], ["union", T...], ["model", Name], ["enum", Name].
A name the file does not define (imported from elsewhere in TensorRT-LLM) becomes ["any", Name].
"""

import argparse
import ast
import html
import json
import os
import re
import subprocess
import sys
import tempfile

# Bases that make a class a pydantic model without being defined in the file.
MODEL_ROOTS = {"BaseModel", "StrictBaseModel"}
# Imported bases whose models forbid extra keys (StrictBaseModel: ``extra = "forbid"`` in every 1.x copy read).
FORBID_ROOTS = {"StrictBaseModel"}
ENUM_ROOTS = {"Enum", "StrEnum", "IntEnum"}
SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str", "bytes": "str", "Path": "str",
           "PositiveInt": "int", "NonNegativeInt": "int", "PositiveFloat": "float", "NonNegativeFloat": "float",
           "StrictInt": "int", "StrictBool": "bool", "StrictStr": "str", "StrictFloat": "float"}
# pydantic's constrained aliases and the bound each implies.
IMPLIED_BOUNDS = {"PositiveInt": {"gt": 0}, "NonNegativeInt": {"ge": 0},
                  "PositiveFloat": {"gt": 0}, "NonNegativeFloat": {"ge": 0}}
FREE_FORM = {"Any", "dict", "Dict", "object", "Callable", "Mapping", "Type", "type"}
LISTS = {"list", "List", "tuple", "Tuple", "set", "Set", "Sequence", "FrozenSet", "frozenset"}
DICTS = {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict"}
BOUNDS = ("ge", "gt", "le", "lt", "min_length", "max_length")


class SourceError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------
# Getting the source text
# ---------------------------------------------------------------------------------------------

_PRE = re.compile(r'<div class="highlight"><pre>(.*?)</pre></div>', re.S)
_TAG = re.compile(r"<[^>]+>")


_VIEWCODE_BACK = re.compile(r'<a class="viewcode-back"[^>]*>\[docs\]</a>\n?')


def source_from_html(text):
    """The Python source of a Sphinx viewcode page: the highlighted block, tags stripped, entities decoded."""
    blocks = _PRE.findall(text)
    if not blocks:
        raise SourceError("no <div class=\"highlight\"><pre> block: is this a rendered _modules/ page?")
    # Documented methods carry a "[docs]" back-link inside the block, at column 0: it would end the class body.
    code = _VIEWCODE_BACK.sub("", max(blocks, key=len))
    return html.unescape(_TAG.sub("", code))


def read_source(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith((".html", ".htm")) or text.lstrip().startswith(("<!DOCTYPE", "<html")):
        return source_from_html(text), "rendered page %s" % os.path.basename(path)
    return text, os.path.basename(path)


def source_from_package():
    import importlib.util  # pylint: disable=import-outside-toplevel

    spec = importlib.util.find_spec("tensorrt_llm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SourceError("tensorrt_llm is not installed for %s" % sys.executable)
    path = os.path.join(list(spec.submodule_search_locations)[0], "llmapi", "llm_args.py")
    return read_source(path)[0], "installed package %s" % path


def source_from_image(image):
    locate = ("import importlib.util as u, os; s = u.find_spec('tensorrt_llm'); "
              "print(os.path.join(list(s.submodule_search_locations)[0], 'llmapi', 'llm_args.py'))")
    path = subprocess.run(["docker", "run", "--rm", "--entrypoint", "python3", image, "-c", locate],
                          check=True, capture_output=True, text=True).stdout.strip()
    container = subprocess.run(["docker", "create", image], check=True, capture_output=True, text=True).stdout.strip()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["docker", "cp", "%s:%s" % (container, path), tmp], check=True, capture_output=True)
            return read_source(os.path.join(tmp, os.path.basename(path)))[0], "image %s:%s" % (image, path)
    finally:
        subprocess.run(["docker", "rm", "-f", container], check=False, capture_output=True)


# ---------------------------------------------------------------------------------------------
# Reading the module
# ---------------------------------------------------------------------------------------------

def _name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr  # typing.Optional -> Optional, pydantic.Field -> Field
    return None


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _unparse(node):
    return ast.unparse(node)


class Module:
    """The classes and type aliases of one llm_args.py, and a type translator over them."""

    def __init__(self, source):
        try:
            self.tree = ast.parse(source)
        except SyntaxError as exc:
            raise SourceError("the source does not parse: %s" % exc) from exc
        self.classes = {}
        self.aliases = {}
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.aliases[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                if _name(node.annotation) == "TypeAlias":
                    self.aliases[node.target.id] = node.value

    # -- class kinds ----------------------------------------------------------------------
    def bases(self, name):
        return [_name(b) for b in self.classes[name].bases if _name(b)]

    def _reaches(self, name, roots, seen=None):
        seen = seen or set()
        if name in roots:
            return True
        if name not in self.classes or name in seen:
            return False
        seen.add(name)
        return any(self._reaches(b, roots, seen) for b in self.bases(name))

    def is_model(self, name):
        return name in self.classes and self._reaches(name, MODEL_ROOTS)

    def is_enum(self, name):
        return name in self.classes and self._reaches(name, ENUM_ROOTS)

    def enum_values(self, name):
        values = []
        for stmt in self.classes[name].body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                value = _literal(stmt.value)
                if isinstance(value, (str, int)) and not stmt.targets[0].id.startswith("_"):
                    values.append(value)
        return values

    def extra(self, name, seen=None):
        """'forbid', 'allow', 'ignore' (pydantic's default) as declared on the class or inherited."""
        seen = seen or set()
        if name in FORBID_ROOTS and name not in self.classes:
            return "forbid"
        if name not in self.classes or name in seen:
            return None
        seen.add(name)
        for stmt in self.classes[name].body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
                if _name(target) == "model_config" and isinstance(stmt.value, ast.Call):
                    for kw in stmt.value.keywords:
                        if kw.arg == "extra":
                            return str(_literal(kw.value) or _name(kw.value)).lower().rsplit(".", maxsplit=1)[-1]
            if isinstance(stmt, ast.ClassDef) and stmt.name == "Config":
                for inner in stmt.body:
                    if isinstance(inner, ast.Assign) and _name(inner.targets[0]) == "extra":
                        return str(_literal(inner.value) or _name(inner.value)).lower().rsplit(".", maxsplit=1)[-1]
        for base in self.bases(name):
            found = self.extra(base, seen)
            if found:
                return found
        return None

    # -- types ----------------------------------------------------------------------------
    def type_of(self, node, bounds=None, depth=0):
        """Translate an annotation; numeric bounds found in Annotated[..., Field(ge=..)] go to ``bounds``."""
        if depth > 20:
            return ["any"]
        if node is None:
            return ["any"]
        if isinstance(node, ast.Constant):
            if node.value is None:
                return ["none"]
            if isinstance(node.value, str):  # forward reference "KvCacheConfig"
                try:
                    return self.type_of(ast.parse(node.value, mode="eval").body, bounds, depth + 1)
                except SyntaxError:
                    return ["any", node.value]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | Y
            return self._union([node.left, node.right], bounds, depth)
        if isinstance(node, ast.Subscript):
            head = _name(node.value)
            args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional":
                return self._union([args[0], ast.Constant(None)], bounds, depth)
            if head == "Union":
                return self._union(args, bounds, depth)
            if head == "Literal":
                return ["literal"] + [_literal(a) for a in args]
            if head == "Annotated":
                if bounds is not None:
                    for meta in args[1:]:
                        if isinstance(meta, ast.Call):
                            bounds.update(_call_bounds(meta))
                return self.type_of(args[0], bounds, depth + 1)
            if head in ("ClassVar", "PrivateAttr", "InitVar"):
                return ["classvar"]
            if head in DICTS:
                key = self.type_of(args[0], None, depth + 1) if args else ["any"]
                value = self.type_of(args[1], None, depth + 1) if len(args) > 1 else ["any"]
                return ["dict", key, value]
            if head in LISTS:
                items = [a for a in args if not (isinstance(a, ast.Constant) and a.value is Ellipsis)]
                return ["list", self.type_of(items[0], None, depth + 1) if items else ["any"]]
            if head in FREE_FORM:
                return ["any"]
            return self.type_of(node.value, bounds, depth + 1)
        name = _name(node)
        if name is None:
            return ["any"]
        if name in SCALARS:
            if bounds is not None:
                bounds.update(IMPLIED_BOUNDS.get(name, {}))
            return [SCALARS[name]]
        if name in FREE_FORM:
            return ["any"]
        if name in LISTS:
            return ["list", ["any"]]
        if name == "None":
            return ["none"]
        if self.is_model(name):
            return ["model", name]
        if self.is_enum(name):
            return ["enum", name]
        if name in self.aliases and name not in self.classes:
            return self.type_of(self.aliases[name], bounds, depth + 1)
        return ["any", name]

    def _union(self, members, bounds, depth):
        out = []
        for member in members:
            kind = self.type_of(member, bounds, depth + 1)
            parts = kind[1:] if kind[0] == "union" else [kind]
            for part in parts:
                if part not in out:
                    out.append(part)
        return out[0] if len(out) == 1 else ["union"] + out

    # -- fields ---------------------------------------------------------------------------
    def own_fields(self, name):
        fields = {}
        for stmt in self.classes[name].body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            field_name = stmt.target.id
            if field_name.startswith("_") or field_name == "model_config":
                continue
            bounds = {}
            kind = self.type_of(stmt.annotation, bounds)
            if kind == ["classvar"]:
                continue
            spec = {"type": kind}
            value = stmt.value
            if isinstance(value, ast.Call) and _name(value.func) == "PrivateAttr":
                continue
            if isinstance(value, ast.Call) and _name(value.func) == "Field":
                spec.update(_field_call(value))
                bounds.update(_call_bounds(value))
            elif value is None:
                spec["required"] = True
            else:
                spec["default"] = _default(value)
            for key in BOUNDS:
                if key in bounds:
                    spec[key] = bounds[key]
            fields[field_name] = spec
        return fields

    def supports_pytorch(self, name, seen=None):
        """What the class's ``supports_backend(backend)`` returns for "pytorch" (None: no such method)."""
        seen = seen or set()
        if name not in self.classes or name in seen:
            return None
        seen.add(name)
        for func in self.classes[name].body:
            if isinstance(func, ast.FunctionDef) and func.name == "supports_backend":
                returns = [n for n in ast.walk(func) if isinstance(n, ast.Return)]
                if len(returns) == 1:
                    return _evaluate(returns[0].value, {"backend": "pytorch"})
                return None
        for base in self.bases(name):
            found = self.supports_pytorch(base, seen)
            if found is not None:
                return found
        return None

    def decoding_tags(self):
        """decoding_type value -> class, from single-value Literal tags and from a from_dict mapping."""
        tags = {}
        for name in self.classes:
            if not self.is_model(name):
                continue
            spec = self.own_fields(name).get("decoding_type")
            if spec and spec["type"][0] == "literal" and len(spec["type"]) == 2:
                tags[spec["type"][1]] = name
        dispatch = {}
        for name, node in self.classes.items():
            for func in node.body:
                if isinstance(func, ast.FunctionDef) and func.name == "from_dict":
                    for inner in ast.walk(func):
                        if isinstance(inner, ast.Dict) and inner.keys and all(
                                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in inner.keys):
                            dispatch.update({k.value: _name(v) for k, v in zip(inner.keys, inner.values)
                                             if _name(v) in self.classes})
        return tags, dispatch


def _evaluate(node, names):
    """A boolean expression over constants and ``names`` (==, !=, in, not in, and, or, not); None if anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [_evaluate(e, names) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _evaluate(node.operand, names)
        return None if value is None else not value
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, names) for v in node.values]
        if None in values:
            return None
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _evaluate(node.left, names), _evaluate(node.comparators[0], names)
        op = node.ops[0]
        if isinstance(op, ast.Eq):
            return left == right
        if isinstance(op, ast.NotEq):
            return left != right
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, list):
            return (left in right) == isinstance(op, ast.In)
    return None


def _default(node):
    value = _literal(node)
    if value is not None or (isinstance(node, ast.Constant) and node.value is None):
        return value
    return {"expr": _unparse(node)}


def _field_call(call):
    spec = {}
    default_given = False
    if call.args:
        if isinstance(call.args[0], ast.Constant) and call.args[0].value is Ellipsis:
            spec["required"] = True
        else:
            spec["default"] = _default(call.args[0])
        default_given = True
    for kw in call.keywords:
        if kw.arg == "default":
            if isinstance(kw.value, ast.Constant) and kw.value.value is Ellipsis:
                spec["required"] = True
            else:
                spec["default"] = _default(kw.value)
            default_given = True
        elif kw.arg == "default_factory":
            spec["default"] = {"factory": _unparse(kw.value)}
            default_given = True
        elif kw.arg in ("alias", "validation_alias"):
            alias = _literal(kw.value)
            if isinstance(alias, str):
                spec.setdefault("aliases", []).append(alias)
            elif isinstance(kw.value, ast.Call):  # AliasChoices("a", "b")
                spec.setdefault("aliases", []).extend(
                    a for a in (_literal(x) for x in kw.value.args) if isinstance(a, str))
    if not default_given:
        spec["required"] = True
    return spec


def _call_bounds(call):
    out = {}
    for kw in call.keywords:
        if kw.arg in BOUNDS:
            value = _literal(kw.value)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[kw.arg] = value
    return out


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

def build_table(source, release, origin, root="TorchLlmArgs"):
    """The release's table: every model reachable from ``root`` and every decoding config."""
    module = Module(source)
    if root not in module.classes:
        raise SourceError("class %s not found: is this tensorrt_llm/llmapi/llm_args.py?" % root)
    tags, dispatch = module.decoding_tags()
    wanted = [root] + sorted(set(tags.values()) | set(dispatch.values()))
    models, enums, queue = {}, {}, list(wanted)
    while queue:
        name = queue.pop(0)
        if name in models:
            continue
        # Each model keeps its own fields and names its bases (models of the table too): inherited fields
        # are resolved when the table is read (resolved_fields), not written again per subclass.
        bases = [b for b in module.bases(name) if module.is_model(b)]
        fields = module.own_fields(name)
        models[name] = {"bases": bases, "extra": module.extra(name) or "ignore", "fields": fields}
        queue.extend(bases)
        for spec in fields.values():
            for ref_kind, ref in _refs(spec["type"]):
                if ref_kind == "model" and ref not in models:
                    queue.append(ref)
                elif ref_kind == "enum":
                    enums[ref] = module.enum_values(ref)
    for name in models:
        supported = module.supports_pytorch(name)
        if supported is not None:
            models[name]["pytorch"] = supported
    return {
        "release": release,
        "source": origin,
        "root": root,
        "models": models,
        "enums": dict(sorted(enums.items())),
        # How speculative_config picks its class: a discriminated union on these Literal tags (1.3),
        # or DecodingBaseConfig.from_dict's mapping (1.2). Both are recorded when present.
        "decoding_tags": dict(sorted(tags.items())),
        "decoding_dispatch": dict(dispatch),
    }


def resolved_fields(table, name):
    """A model's fields as pydantic has them: inherited ones first (from the last base to the first), then its own."""
    model = table["models"][name]
    out = {}
    for base in reversed(model.get("bases", ())):
        out.update(resolved_fields(table, base))
    out.update(model["fields"])
    return out


def _refs(kind):
    if kind[0] in ("model", "enum"):
        yield kind[0], kind[1]
    elif kind[0] in ("list", "dict", "union"):
        for part in kind[1:]:
            if isinstance(part, list):
                yield from _refs(part)


def _literal_text(value, indent, width=150):
    """``value`` as a Python literal that pep8 accepts: hanging indents, lines within ``width``."""
    pad = " " * indent
    flat = repr(value)
    if len(flat) + indent <= width:
        return flat
    inner = " " * (indent + 4)
    if isinstance(value, str):  # split at spaces into adjacent literals
        parts, line = [], ""
        for word in value.split(" "):
            candidate = word if not line else line + " " + word
            if len(repr(candidate)) + indent + 4 > width and line:
                parts.append(line + " ")
                line = word
            else:
                line = candidate
        parts.append(line)
        return "(\n%s%s)" % (inner, ("\n" + inner).join(repr(part) for part in parts))
    if isinstance(value, dict):
        items = ["%s%r: %s," % (inner, key, _literal_text(item, indent + 4, width - len(repr(key)) - 2))
                 for key, item in value.items()]
        return "{\n%s\n%s}" % ("\n".join(items), pad)
    if isinstance(value, list):
        items = ["%s%s," % (inner, _literal_text(item, indent + 4, width)) for item in value]
        return "[\n%s\n%s]" % ("\n".join(items), pad)
    return flat


def module_text(table):
    return ('# -*- coding: utf-8 -*-\n'
            '# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)\n'
            '# Generated by tools/llm_args_table.py. Do not edit: regenerate and review the diff.\n'
            '# pylint: disable=too-many-lines\n'
            '"""Option field table of TensorRT-LLM %s (data only)."""\n\n'
            'from __future__ import annotations\n\n'
            'TABLE = %s\n' % (table["release"], _literal_text(table, 0)))


def compare(old, new):
    """Lines saying what ``new`` adds, drops and changes against ``old`` (models, fields, decoding types)."""
    lines = []
    for tag in sorted(set(old["decoding_tags"]) | set(old["decoding_dispatch"])):
        if tag not in new["decoding_tags"] and tag not in new["decoding_dispatch"]:
            lines.append("- decoding_type %s" % tag)
    for tag in sorted(set(new["decoding_tags"]) | set(new["decoding_dispatch"])):
        if tag not in old["decoding_tags"] and tag not in old["decoding_dispatch"]:
            lines.append("+ decoding_type %s" % tag)
    for name in sorted(set(old["models"]) | set(new["models"])):
        before, after = old["models"].get(name), new["models"].get(name)
        if before is None or after is None:
            lines.append("%s model %s" % ("+" if before is None else "-", name))
            continue
        was, now = resolved_fields(old, name), resolved_fields(new, name)
        for key in [k for k in was if k not in now]:
            lines.append("- %s.%s" % (name, key))
        for key in [k for k in now if k not in was]:
            lines.append("+ %s.%s %s" % (name, key, json.dumps(now[key])))
        for key in [k for k in now if k in was and now[k] != was[k]]:
            lines.append("~ %s.%s %s -> %s" % (name, key, json.dumps(was[key]), json.dumps(now[key])))
        if before.get("extra") != after.get("extra"):
            lines.append("~ %s extra %s -> %s" % (name, before.get("extra"), after.get("extra")))
    return lines


def load_table(release, directory):
    """A table this tool wrote before (its module's TABLE), read as data."""
    with open(output_path(release, directory), encoding="utf-8") as handle:
        text = handle.read()
    return ast.literal_eval(text[text.index("TABLE = ") + len("TABLE = "):])


def output_path(release, directory):
    return os.path.join(directory, "_trtllm_release_%s.py" % re.sub(r"[^0-9a-zA-Z]", "_", release))


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("release", help="the release the source belongs to, e.g. 1.3.0rc13")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--source", help="llm_args.py, or its rendered documentation page (.html)")
    where.add_argument("--package", action="store_true", help="the tensorrt_llm installed for this Python")
    where.add_argument("--image", help="a TensorRT-LLM release image (docker)")
    parser.add_argument("--origin", help="how to cite the source in the table (default: derived)")
    parser.add_argument("--out-dir", default=os.path.join(here, "..", "plugins", "module_utils"))
    parser.add_argument("--json", action="store_true", help="print the table as JSON instead of writing it")
    parser.add_argument("--compare-with", metavar="RELEASE",
                        help="then print what changed against the table of RELEASE (for the review)")
    args = parser.parse_args(argv)
    try:
        if args.source:
            source, origin = read_source(args.source)
        elif args.package:
            source, origin = source_from_package()
        else:
            source, origin = source_from_image(args.image)
        table = build_table(source, args.release, args.origin or origin)
    except (OSError, SourceError, subprocess.CalledProcessError) as exc:
        parser.exit(1, "llm_args_table: %s\n" % exc)
    if args.json:
        json.dump(table, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    path = output_path(args.release, args.out_dir)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(module_text(table))
    print("%s: %d models, %d enums, %d decoding types" % (
        os.path.relpath(path), len(table["models"]), len(table["enums"]),
        len(table["decoding_tags"]) + len(set(table["decoding_dispatch"]) - set(table["decoding_tags"]))))
    if args.compare_with:
        for line in compare(load_table(args.compare_with, args.out_dir), table):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
