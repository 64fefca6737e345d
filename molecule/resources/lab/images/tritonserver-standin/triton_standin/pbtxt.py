"""A small reader of protobuf text format, enough for a Triton ``config.pbtxt``.

``parse(text)`` returns ``{field: [value, ...]}``: every field is a list (repeated or not), a nested message
is such a dict, a scalar is a str (quoted strings unquoted), int, float, or bare identifier (TYPE_FP32,
true, KIND_CPU). ``first(msg, field, default)`` reads a singular field. Syntax errors raise PbtxtError.
"""

import re

_TOKEN = re.compile(r'\s+|#[^\n]*|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|[{}\[\]:,;<>]|[^\s{}\[\]:,;<>"\'#]+')
_CLOSE = {"{": "}", "<": ">"}


class PbtxtError(ValueError):
    pass


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise PbtxtError("unexpected character %r at offset %d" % (text[pos], pos))
        token = match.group(0)
        if not token.isspace() and not token.startswith("#"):
            out.append((token, pos))
        pos = match.end()
    return out


def _scalar(token, pos):
    if token[0] in "\"'":
        return token[1:-1].encode("utf-8").decode("unicode_escape")
    if re.match(r"^-?\d+$", token):
        return int(token)
    if re.match(r"^-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?[fF]?$", token):
        return float(token.rstrip("fF"))
    if re.match(r"^[A-Za-z_][A-Za-z0-9_.]*$", token):
        return token
    raise PbtxtError("unexpected token %r at offset %d" % (token, pos))


class _Parser:
    def __init__(self, text):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def take(self, expected=None):
        if self.i >= len(self.toks):
            raise PbtxtError("unexpected end of input" + (" (expected %r)" % expected if expected else ""))
        token, pos = self.toks[self.i]
        if expected is not None and token != expected:
            raise PbtxtError("expected %r at offset %d, got %r" % (expected, pos, token))
        self.i += 1
        return token, pos

    def message(self, close=None):
        fields = {}
        while self.peek() != close:
            if self.peek() is None:
                raise PbtxtError("unexpected end of input (expected %r)" % close)
            name, pos = self.take()
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
                raise PbtxtError("expected a field name at offset %d, got %r" % (pos, name))
            values = fields.setdefault(name, [])
            if self.peek() == ":":
                self.take(":")
            if self.peek() == "[":
                self.take("[")
                while self.peek() != "]":
                    values.append(self.value())
                    if self.peek() == ",":
                        self.take(",")
                self.take("]")
            else:
                values.append(self.value())
            if self.peek() in (",", ";"):
                self.take()
        return fields

    def value(self):
        token, pos = self.take()
        if token in _CLOSE:
            inner = self.message(_CLOSE[token])
            self.take(_CLOSE[token])
            return inner
        return _scalar(token, pos)


def parse(text):
    parser = _Parser(text)
    return parser.message(None)


def first(msg, field, default=None):
    values = msg.get(field) or []
    return values[0] if values else default
