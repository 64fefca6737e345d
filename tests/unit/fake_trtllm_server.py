# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A stand-in for the HTTP interface of TensorRT-LLM ``trtllm-serve``.

Test double only: standard library, binds to a loopback address, ephemeral
port by default, and stops itself after ``lifetime`` seconds.

Behaviour (as tensorrt_llm/serve/openai_server.py in https://github.com/NVIDIA/TensorRT-LLM serves it,
and the trtllm-serve command reference describes it,
https://nvidia.github.io/TensorRT-LLM/<release>/commands/trtllm-serve/trtllm-serve.html):

* ``GET /health``: 503 ``LLM is unavailable`` until ``ready_after`` seconds
  after start (``None`` = never), then 200.
* ``GET /v1/models``: ``{"object": "list", "data": [{"id": model_id, ...}]}``.
* ``POST /v1/completions`` / ``/v1/chat/completions``: OpenAI shapes with
  ``usage``. Each successful generation appends one iteration-stats entry
  per item of ``spec_stats_per_request`` to the ``/metrics`` queue and one
  entry to the ``/perf_metrics`` queue.
* ``GET /metrics`` / ``GET /perf_metrics``: JSON lists, emptied on read.
* ``GET /prometheus/metrics``: the collector's cumulative counters as a build with TensorRT-LLM PRs #12545 and #12636
  serves them (``trtllm_spec_decode_num_{draft,accepted}_tokens_total`` and, per ``token_position`` from 0,
  ``trtllm_spec_decode_{drafted,accepted}_tokens_total``), counted from the same iteration stats; each stat is one
  request's step. ``prometheus_status`` other than 200 answers that status instead.
* ``POST /_fake/shutdown`` (test control, not trtllm-serve): stop the server.

Misbehaviour is selected with ``FakeConfig`` fields: ``ready_after=None``,
``generation_status``/``generation_error_body``, ``model_id``,
``models_body``, ``fault`` (``empty_text``, ``malformed_json``,
``missing_usage``, ``missing_choices``, ``close_mid_response``,
``close_before_response``), ``generation_delay``, ``metrics_status``,
``perf_metrics_status``.

Run as a script for playbook tests::

    python fake_trtllm_server.py --port-file /tmp/port --lifetime 120
"""

from __future__ import annotations

import argparse
import copy
import ipaddress
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_SPEC_STATS = (
    {'numDraftTokens': 12, 'numAcceptedTokens': 9, 'numRequestsWithDraftTokens': 1,
     'acceptanceLength': 10.0, 'iterLatencyMS': 1.5, 'draftOverhead': 0.2},
    {'numDraftTokens': 8, 'numAcceptedTokens': 2, 'numRequestsWithDraftTokens': 1,
     'acceptanceLength': 3.0, 'iterLatencyMS': 1.0, 'draftOverhead': 0.1},
)


class FakeConfig:
    """Knobs of the fake server. Attributes may be changed while it runs."""

    def __init__(self, **kwargs):
        self.model_id = 'dgx-spark/test-model'
        self.ready_after = 0.0
        self.completion_text = ' it has the Eiffel Tower, wonderful food and many museums.'
        self.completion_tokens = 16
        self.prompt_tokens = 5
        self.generation_delay = 0.0
        self.generation_status = 200
        self.generation_error_body = None
        self.fault = None
        self.models_body = None
        self.metrics_status = 200
        self.perf_metrics_status = 200
        self.prometheus_status = 200
        self.spec_stats_per_request = [dict(s) for s in DEFAULT_SPEC_STATS]
        self.perf_spec_per_request = {'acceptance_rate': 0.55, 'total_accepted_draft_tokens': 11,
                                      'total_draft_tokens': 20}
        self.initial_metrics = []
        self.initial_perf_metrics = []
        for key, value in kwargs.items():
            if not hasattr(self, key):
                raise TypeError('unknown FakeConfig field %r' % key)
            setattr(self, key, value)


class _Handler(BaseHTTPRequestHandler):
    server_version = 'fake-trtllm-serve/0.1'
    protocol_version = 'HTTP/1.0'

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        if self.server.fake.verbose:
            sys.stderr.write('fake_trtllm_server: ' + (format % args) + '\n')

    # -- helpers ---------------------------------------------------------
    def _send(self, status, body, content_type='application/json'):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode('utf-8') if content_type == 'application/json' else body.encode('utf-8')
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _read_body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(length) if length else b''

    # -- routes ----------------------------------------------------------
    def do_GET(self):
        fake = self.server.fake
        fake.record(self, None)
        cfg = fake.config
        if self.path == '/health':
            if fake.is_ready():
                self._send(200, b'', 'text/plain')
            else:
                self._send(503, 'LLM is unavailable', 'text/plain')
        elif self.path == '/v1/models':
            if cfg.models_body is not None:
                body = cfg.models_body
                self._send(200, body if isinstance(body, bytes) else json.dumps(body).encode('utf-8'))
            else:
                self._send(200, {'object': 'list', 'data': [
                    {'id': cfg.model_id, 'object': 'model', 'created': 1767225600, 'owned_by': 'tensorrt_llm'}]})
        elif self.path == '/metrics':
            if cfg.metrics_status != 200:
                self._send(cfg.metrics_status, {'detail': 'Not Found'})
            else:
                self._send(200, fake.drain('metrics'))
        elif self.path == '/perf_metrics':
            if cfg.perf_metrics_status != 200:
                self._send(cfg.perf_metrics_status, {'detail': 'Not Found'})
            else:
                self._send(200, fake.drain('perf_metrics'))
        elif self.path == '/prometheus/metrics':
            if cfg.prometheus_status != 200:
                self._send(cfg.prometheus_status, {'detail': 'Not Found'})
            else:
                self._send(200, fake.prometheus_text(), 'text/plain; version=0.0.4')
        elif self.path == '/version':
            self._send(200, {'version': '1.3.0rc12-fake'})
        else:
            self._send(404, {'detail': 'Not Found'})

    def do_POST(self):
        fake = self.server.fake
        raw = self._read_body()
        fake.record(self, raw)
        if self.path == '/_fake/shutdown':
            self._send(200, {'stopping': True})
            threading.Thread(target=fake.stop, daemon=True).start()
            return
        if self.path not in ('/v1/completions', '/v1/chat/completions'):
            self._send(404, {'detail': 'Not Found'})
            return
        try:
            req = json.loads(raw.decode('utf-8') or '{}')
        except ValueError:
            self._send(400, {'object': 'error', 'message': 'invalid JSON body', 'code': 400})
            return
        cfg = fake.config
        if cfg.generation_delay:
            fake.stopping.wait(cfg.generation_delay)
        if cfg.generation_status != 200:
            body = cfg.generation_error_body
            if body is None:
                body = {'object': 'error', 'message': 'internal error', 'type': 'InternalServerError',
                        'code': cfg.generation_status}
            if isinstance(body, str):
                self._send(cfg.generation_status, body.encode('utf-8'), 'text/plain')
            else:
                self._send(cfg.generation_status, body if isinstance(body, bytes) else json.dumps(body).encode())
            return
        if req.get('model') != cfg.model_id:
            self._send(404, {'object': 'error', 'message': 'The model `%s` does not exist.' % req.get('model'),
                             'type': 'NotFoundError', 'code': 404})
            return
        if cfg.fault == 'close_before_response':
            self.close_connection = True
            return
        chat = self.path == '/v1/chat/completions'
        text = '' if cfg.fault == 'empty_text' else cfg.completion_text
        tokens = 0 if cfg.fault == 'empty_text' else min(cfg.completion_tokens, int(req.get('max_tokens') or 16))
        if chat:
            choice = {'index': 0, 'message': {'role': 'assistant', 'content': text, 'reasoning_content': None,
                                              'tool_calls': []},
                      'logprobs': None, 'finish_reason': 'length', 'stop_reason': None}
        else:
            choice = {'index': 0, 'text': text, 'logprobs': None, 'finish_reason': 'length', 'stop_reason': None}
        doc = {'id': 'cmpl-%d' % fake.next_id(), 'object': 'chat.completion' if chat else 'text_completion',
               'created': int(time.time()), 'model': cfg.model_id, 'choices': [choice],
               'usage': {'prompt_tokens': cfg.prompt_tokens, 'completion_tokens': tokens,
                         'total_tokens': cfg.prompt_tokens + tokens}}
        if cfg.fault == 'missing_usage':
            del doc['usage']
        if cfg.fault == 'missing_choices':
            doc['choices'] = []
        body = json.dumps(doc).encode('utf-8')
        if cfg.fault == 'malformed_json':
            body = body[:len(body) // 2]
        if cfg.fault == 'close_mid_response':
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 3])
            self.wfile.flush()
            self.close_connection = True
            return
        fake.add_stats(doc['id'])
        self._send(200, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeTrtllmServer:
    """Start with ``start()`` or as a context manager; ``url`` is the base URL."""

    def __init__(self, config=None, host='127.0.0.1', port=0, lifetime=60.0, verbose=False):
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError('the fake server only binds to loopback addresses, not %r' % host)
        self.config = config or FakeConfig()
        self.host = host
        self.port = port
        self.lifetime = lifetime
        self.verbose = verbose
        self.requests = []
        self.stopping = threading.Event()
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._ids = 0
        self._queues = {'metrics': copy.deepcopy(self.config.initial_metrics),
                        'perf_metrics': copy.deepcopy(self.config.initial_perf_metrics)}
        self._iter = 0
        self._counters = {'drafted': 0, 'accepted': 0, 'positions': {}, 'seen': False}
        self._started = None
        self._httpd = None
        self._thread = None
        self._timer = None

    # -- state used by the handler --------------------------------------
    def is_ready(self):
        ready_after = self.config.ready_after
        return ready_after is not None and time.monotonic() - self._started >= ready_after

    def record(self, handler, body):
        with self._lock:
            self.requests.append({'method': handler.command, 'path': handler.path,
                                  'headers': dict(handler.headers.items()), 'body': body})

    def next_id(self):
        with self._lock:
            self._ids += 1
            return self._ids

    def drain(self, name):
        with self._lock:
            items, self._queues[name] = self._queues[name], []
            return items

    def add_stats(self, request_id):
        cfg = self.config
        with self._lock:
            for spec in cfg.spec_stats_per_request or ():
                self._iter += 1
                entry = {'iter': self._iter, 'iterLatencyMS': 12.5, 'gpuMemUsage': 1 << 30, 'numActiveRequests': 1}
                if spec is not None:
                    entry['specDecodingStats'] = dict(spec)
                    self._count(spec)
                self._queues['metrics'].append(entry)
            perf = {'first_iter': self._iter, 'last_iter': self._iter,
                    'timing_metrics': {'arrival_time': 1.0, 'first_scheduled_time': 1.1,
                                       'first_token_time': 1.2, 'last_token_time': 1.5}}
            if cfg.perf_spec_per_request is not None:
                perf['speculative_decoding'] = dict(cfg.perf_spec_per_request)
            self._queues['perf_metrics'].append({'request_id': request_id, 'perf_metrics': perf})

    def _count(self, spec):
        drafted, accepted = int(spec.get('numDraftTokens') or 0), int(spec.get('numAcceptedTokens') or 0)
        counters = self._counters
        counters['seen'] = True
        counters['drafted'] += drafted
        counters['accepted'] += accepted
        for position in range(drafted):
            slot = counters['positions'].setdefault(position, [0, 0])
            slot[0] += 1
            slot[1] += 1 if position < accepted else 0

    def prometheus_text(self):
        labels = 'engine_type="trtllm",model_name="%s"' % self.config.model_id
        with self._lock:
            counters = copy.deepcopy(self._counters)
        if not counters['seen']:  # a labelled counter appears with its first value, as prometheus_client's do
            return '# TYPE trtllm_request_success counter\n'
        lines = ['# TYPE trtllm_spec_decode_num_draft_tokens counter',
                 'trtllm_spec_decode_num_draft_tokens_total{%s} %d.0' % (labels, counters['drafted']),
                 '# TYPE trtllm_spec_decode_num_accepted_tokens counter',
                 'trtllm_spec_decode_num_accepted_tokens_total{%s} %d.0' % (labels, counters['accepted'])]
        for index, name in enumerate(('drafted', 'accepted')):
            lines.append('# TYPE trtllm_spec_decode_%s_tokens counter' % name)
            lines += ['trtllm_spec_decode_%s_tokens_total{%s,token_position="%d"} %d.0' % (name, labels, pos, slot[index])
                      for pos, slot in sorted(counters['positions'].items())]
        return '\n'.join(lines) + '\n'

    # -- lifecycle -------------------------------------------------------
    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    def paths(self, method=None):
        return [r['path'] for r in self.requests if method is None or r['method'] == method]

    def start(self):
        self._httpd = _Server((self.host, self.port), _Handler)
        self._httpd.fake = self
        self.port = self._httpd.server_address[1]
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={'poll_interval': 0.05},
                                        name='fake-trtllm-serve', daemon=True)
        self._thread.start()
        if self.lifetime:
            self._timer = threading.Timer(self.lifetime, self.stop)
            self._timer.daemon = True
            self._timer.start()
        return self

    def stop(self):
        self.stopping.set()
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        self.stopped.set()

    def wait(self):
        """Block until stopped (script mode)."""
        self.stopped.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--port-file', help='write the bound port to this file once listening')
    parser.add_argument('--lifetime', type=float, default=120.0, help='stop after this many seconds (max 3600)')
    parser.add_argument('--model', default=FakeConfig().model_id)
    parser.add_argument('--ready-after', type=float, default=0.0)
    parser.add_argument('--no-spec', action='store_true', help='no specDecodingStats and no perf_metrics blocks')
    parser.add_argument('--metrics-404', action='store_true')
    parser.add_argument('--verbose', action='store_true')
    args = parser.parse_args(argv)
    config = FakeConfig(model_id=args.model, ready_after=args.ready_after,
                        metrics_status=404 if args.metrics_404 else 200,
                        perf_metrics_status=404 if args.metrics_404 else 200)
    if args.no_spec:
        config.spec_stats_per_request = [None]
        config.perf_spec_per_request = None
    server = FakeTrtllmServer(config, host=args.host, port=args.port,
                              lifetime=min(max(args.lifetime, 1.0), 3600.0), verbose=args.verbose)
    server.start()
    if args.port_file:
        tmp = args.port_file + '.tmp'
        with open(tmp, 'w') as handle:
            handle.write('%d\n' % server.port)
        os.replace(tmp, args.port_file)
    print(server.url, flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
