# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Read a Grafana dashboard's queries the way Grafana would send them to Prometheus.

``panel_queries(path, variables)`` lists every panel's targets as ``(panel title, refId, expr)`` with the
template variables substituted, so that a static test can check the metric names and a live test can run
each expression against a real Prometheus (``/api/v1/query``). Standard library only.

Substitution follows Grafana's Prometheus datasource (``interpolateQueryExpr`` and ``prometheusSpecialRegexEscape``
in https://github.com/grafana/grafana/blob/main/packages/grafana-prometheus/src/escaping.ts): a multi-value
variable becomes a regex alternation ``(a|b)`` of its values, each escaped for a regex inside a PromQL
double-quoted string (a metacharacter gets two backslashes, a backslash four); a single selected value is
escaped the same way; a plain string is inserted as it is.
"""

from __future__ import annotations

import json
import re

# What Grafana would pick with a 15s scrape interval (the provisioned datasource's timeInterval) on a short range.
DEFAULT_VARIABLES = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
    "datasource": "prometheus",
    "cluster": ".*",
}

# $name, ${name} and ${name:format}; \w+ is greedy, so $__rate_interval never reads as $__rate.
VARIABLE_RE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
REGEX_METACHARACTERS = re.compile(r"([$^*{}\[\]'+?.()|])")


def escape_value(value):
    """One variable value as Grafana inserts it in a PromQL regex matcher."""
    text = str(value).replace("\\", "\\" * 4)
    return REGEX_METACHARACTERS.sub(r"\\\\\1", text)


def format_value(value):
    """A variable's value as text: a list is a multi-value selection, a string goes in unchanged."""
    if isinstance(value, (list, tuple)):
        escaped = [escape_value(item) for item in value]
        if len(escaped) == 1:
            return escaped[0]
        return "(" + "|".join(escaped) + ")"
    return str(value)


def substitute(expr, variables=None):
    """``expr`` with every Grafana variable replaced; an unknown variable raises KeyError (a typo in a panel)."""
    merged = dict(DEFAULT_VARIABLES)
    merged.update(variables or {})

    def replace(match):
        name = match.group(1) or match.group(2)
        if name not in merged:
            raise KeyError("unknown Grafana variable $%s in %r" % (name, expr))
        return format_value(merged[name])

    return VARIABLE_RE.sub(replace, expr)


def iter_panels(panels):
    """Every panel, the ones nested in (collapsed) rows included; the rows themselves too."""
    for panel in panels or []:
        yield panel
        yield from iter_panels(panel.get("panels"))


def load(path):
    """The dashboard JSON as a dict."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def panel_queries(path, variables=None):
    """``[(panel title, refId, expr), ...]`` for every target with an expression, variables substituted.

    ``variables`` maps a variable name (without ``$``) to a string (inserted as is, e.g. ``".*"`` or ``"2m"``)
    or a list of values (a multi-value selection). Unset names take DEFAULT_VARIABLES.
    """
    queries = []
    for panel in iter_panels(load(path).get("panels")):
        for target in panel.get("targets") or []:
            expr = target.get("expr")
            if expr:
                queries.append((panel.get("title", ""), target.get("refId", ""), substitute(expr, variables)))
    return queries
