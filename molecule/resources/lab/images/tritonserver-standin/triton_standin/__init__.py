"""Stand-in for Triton Inference Server with the TensorRT-LLM LLM API backend (DGX Spark lab only).

``tritonserver`` (server.py) loads a model repository whose python models are the LLM API model
(``/app/all_models/llmapi``: ``<model>/1/model.yaml``), judged by the TRT-LLM stand-in's own models of
``$TRTLLM_VERSION`` (trtllm_standin.release), and serves Triton's HTTP generate extension, a metrics port
and a listening gRPC port. Generation is the TRT-LLM stand-in's simulated Engine (timing, speculative
decoding, STANDIN_SPEC_PROFILE). See molecule/resources/lab/README.md, section "Triton stand-in".
"""

import json
import os
import sys
import threading
import time

# The TRT-LLM stand-in's package (installed by the base image of this one).
TRTLLM_STANDIN = "/opt/trtllm-standin"
if os.path.isdir(TRTLLM_STANDIN) and TRTLLM_STANDIN not in sys.path:
    sys.path.append(TRTLLM_STANDIN)

LEVELS = {"E": 0, "W": 1, "I": 2}


class Logger:
    """Triton's log lines: ``I1123 18:00:00.123456 <pid> <file>:<line>] "<message>"``.

    Messages are JSON-escaped and quoted as Triton does by default (TRITON_SERVER_ESCAPE_LOG_MESSAGES=0 turns
    that off). Information goes to stdout, warnings and errors to stderr, everything to --log-file if given.
    """

    def __init__(self):
        self.verbose = 0
        self.enabled = {"E": True, "W": True, "I": True}
        self.path = None
        self.handle = None
        self.escape = os.environ.get("TRITON_SERVER_ESCAPE_LOG_MESSAGES", "") != "0"
        self.lock = threading.Lock()

    def open(self, path):
        self.path = path
        self.handle = open(path, "a", encoding="utf-8")  # pylint: disable=consider-using-with

    def _write(self, level, text):
        with self.lock:
            if self.handle:
                self.handle.write(text + "\n")
                self.handle.flush()
            else:
                stream = sys.stdout if level == "I" else sys.stderr
                stream.write(text + "\n")
                stream.flush()

    def log(self, level, where, message, table=None):
        """One record; ``table`` (a preformatted block) follows the preamble unescaped, as Triton's tables."""
        if not self.enabled[level]:
            return
        now = time.time()
        stamp = time.gmtime(now)
        preamble = "%s%02d%02d %02d:%02d:%02d.%06d %d %s] " % (
            level, stamp.tm_mon, stamp.tm_mday, stamp.tm_hour, stamp.tm_min, stamp.tm_sec,
            int((now % 1) * 1e6), os.getpid(), where)
        if table is not None:
            self._write(level, preamble + "\n" + table)
            return
        text = json.dumps(message, ensure_ascii=False) if self.escape else message
        self._write(level, preamble + text)

    def info(self, where, message, **kw):
        self.log("I", where, message, **kw)

    def warning(self, where, message):
        self.log("W", where, message)

    def error(self, where, message):
        self.log("E", where, message)

    def verbose_log(self, level, where, message):
        if self.verbose >= level:
            self.log("I", where, message)

    def raw(self, text, stream=None):
        """Output that bypasses the logger (the backend's own prints): stdout, or the log file."""
        with self.lock:
            if self.handle:
                self.handle.write(text + "\n")
                self.handle.flush()
            else:
                target = stream or sys.stdout
                target.write(text + "\n")
                target.flush()


LOG = Logger()


def table(headers, rows):
    """Triton's ASCII tables (+----+ borders, left-aligned cells)."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def fmt(row):
        return "|" + "|".join(" %-*s " % (w, c) for w, c in zip(widths, row)) + "|"
    return "\n".join([line, fmt(headers), line] + [fmt(r) for r in rows] + [line])
