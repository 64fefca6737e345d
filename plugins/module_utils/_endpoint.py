# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Validate an OpenAI-compatible endpoint served by TensorRT-LLM ``trtllm-serve``, or Triton Inference
Server's generate endpoint of the TensorRT-LLM LLM API backend (``api='triton'``).

This is a private module_utils file (leading underscore): its API may change
without notice. It holds all the logic of the ``specdec_endpoint`` module so
that it can be unit-tested without Ansible. The HTTP layer is an injectable
*opener* callable::

    opener(method, url, body, headers, timeout) -> (status, body_bytes)

which returns the HTTP status and body for every status code (including
4xx/5xx) and raises :class:`TransportError` when no HTTP response was
obtained (connection refused, timeout, connection closed mid-response...).
:func:`make_urls_opener` builds the production opener on top of
``ansible.module_utils.urls.open_url``.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
import urllib.error
from urllib.parse import urlsplit

from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible.module_utils.urls import SSLValidationError
from ansible.module_utils.urls import open_url

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _metrics as metrics

API_PATHS = {
    'completions': '/v1/completions',
    'chat': '/v1/chat/completions',
    'triton': '/v2/models/%s/generate',
}
API_CHOICES = ('completions', 'chat', 'both', 'triton')
HEALTH_PATHS = {'triton': '/v2/health/ready'}
# Per-request speculative-decoding figures of the LLM API backend's generate response (with
# sampling_param_return_perf_metrics). Its model.py sends every output with the text's dtype, so they may
# arrive as strings ("0.75") although config.pbtxt declares numbers.
TRITON_SPEC_KEYS = ('acceptance_rate', 'total_accepted_draft_tokens', 'total_draft_tokens')
TRITON_TIME_KEYS = ('arrival_time_ns', 'first_token_time_ns', 'last_token_time_ns')
BODY_EXCERPT_CHARS = 300
TEXT_EXCERPT_CHARS = 200
HTTP_AGENT = 'ansible-dgx_spark.specdec-specdec_endpoint'


class EndpointError(Exception):
    """Validation failed. ``details`` holds partial results for fail_json."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


class TransportError(Exception):
    """No HTTP response was obtained.

    ``kind`` is one of ``refused``, ``timeout``, ``closed``, ``tls``, ``other``;
    the message is a short human-readable description.
    """

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


# ---------------------------------------------------------------------------
# HTTP layer
# ---------------------------------------------------------------------------

def _describe_exception(exc, timeout):
    """Map a low-level exception to ``(kind, message)``."""
    reason = exc
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        reason = exc.reason
    if isinstance(reason, ConnectionRefusedError):
        return 'refused', 'connection refused'
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return 'timeout', 'timed out after %gs' % timeout
    if isinstance(reason, (http.client.RemoteDisconnected, http.client.IncompleteRead,
                           ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return 'closed', 'connection closed by the server before a complete response (%s)' % (
            type(reason).__name__)
    if isinstance(reason, http.client.HTTPException):
        return 'closed', 'invalid HTTP response (%s: %s)' % (type(reason).__name__, reason)
    if isinstance(reason, ssl.SSLError):
        return 'tls', 'TLS error: %s' % reason
    if isinstance(reason, str) and 'timed out' in reason:
        return 'timeout', 'timed out after %gs' % timeout
    return 'other', '%s: %s' % (type(reason).__name__, reason)


def make_urls_opener(validate_certs=True, use_proxy=True):
    """Return an opener backed by ``ansible.module_utils.urls.open_url``."""

    def opener(method, url, body, headers, timeout):
        try:
            resp = open_url(url, data=body, headers=headers, method=method, timeout=timeout,
                            validate_certs=validate_certs, use_proxy=use_proxy,
                            http_agent=HTTP_AGENT, follow_redirects='safe')
            try:
                return resp.getcode(), resp.read()
            finally:
                resp.close()
        except urllib.error.HTTPError as exc:
            try:
                data = exc.read()
            except Exception:  # pylint: disable=broad-except
                data = b''
            return exc.code, data or b''
        except UrlsConnectionError as exc:
            # raised by open_url itself, e.g. for certificate validation problems
            raise TransportError('tls' if isinstance(exc, SSLValidationError) else 'other', str(exc))
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            kind, message = _describe_exception(exc, timeout)
            raise TransportError(kind, message)

    return opener


def excerpt(data, limit=BODY_EXCERPT_CHARS):
    """Decode ``data`` leniently and shorten it to at most ``limit`` characters."""
    if data is None:
        return ''
    if isinstance(data, bytes):
        text = data.decode('utf-8', errors='replace')
    else:
        text = str(data)
    text = ' '.join(text.split())
    if len(text) > limit:
        text = text[:max(limit - 3, 0)] + '...'
    return text


class EndpointClient:
    """Small JSON-over-HTTP client bound to one base URL."""

    def __init__(self, base_url, opener, headers=None, request_timeout=120.0, clock=time.monotonic):
        self.base_url = base_url
        self.opener = opener
        self.headers = dict(headers or {})
        self.request_timeout = request_timeout
        self.clock = clock

    def request(self, method, path, payload=None, timeout=None):
        """Send one request; return ``(status, body, elapsed_seconds)``.

        Raises :class:`TransportError` if no HTTP response was obtained.
        """
        headers = dict(self.headers)
        headers.setdefault('Accept', 'application/json')
        body = None
        if payload is not None:
            body = json.dumps(payload).encode('utf-8')
            headers['Content-Type'] = 'application/json'
        timeout = self.request_timeout if timeout is None else timeout
        start = self.clock()
        status, data = self.opener(method, self.base_url + path, body, headers, timeout)
        return status, data, self.clock() - start


# ---------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------

def normalize_url(url):
    """Validate a base URL and return it without trailing ``/`` or ``/v1``."""
    if not isinstance(url, str) or not url.strip():
        raise EndpointError('url must be a non-empty http:// or https:// base URL')
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ('http', 'https') or not parts.netloc:
        raise EndpointError('url must start with http:// or https:// and name a host, got %r' % url)
    if parts.query or parts.fragment:
        raise EndpointError('url must be a base URL without query or fragment, got %r' % url)
    url = url.rstrip('/')
    if url.endswith('/v1'):
        url = url[:-3].rstrip('/')
    return url


def check_params(params):
    """Raise :class:`EndpointError` naming every out-of-range parameter."""
    errors = []
    if params.get('api') not in API_CHOICES:
        errors.append('api must be one of %s, got %r' % (', '.join(API_CHOICES), params.get('api')))
    if not params.get('model'):
        errors.append('model must be a non-empty string')
    if params.get('prompt') is None or not str(params.get('prompt')).strip():
        errors.append('prompt must be a non-empty string')
    if params.get('requests') is None or params['requests'] < 1:
        errors.append('requests must be >= 1, got %r' % params.get('requests'))
    if params.get('max_tokens') is None or params['max_tokens'] < 1:
        errors.append('max_tokens must be >= 1, got %r' % params.get('max_tokens'))
    if params.get('temperature') is None or params['temperature'] < 0:
        errors.append('temperature must be >= 0, got %r' % params.get('temperature'))
    if params.get('timeout') is None or params['timeout'] < 0:
        errors.append('timeout must be >= 0 seconds, got %r' % params.get('timeout'))
    if params.get('request_timeout') is None or params['request_timeout'] <= 0:
        errors.append('request_timeout must be > 0 seconds, got %r' % params.get('request_timeout'))
    if params.get('poll_interval') is not None and params['poll_interval'] <= 0:
        errors.append('poll_interval must be > 0 seconds, got %r' % params.get('poll_interval'))
    mtps = params.get('min_tokens_per_second')
    if mtps is not None and mtps < 0:
        errors.append('min_tokens_per_second must be >= 0, got %r' % mtps)
    try:
        normalize_url(params.get('url'))
    except EndpointError as exc:
        errors.append(exc.msg)
    if params.get('metrics_url'):
        try:
            normalize_url(params['metrics_url'])
        except EndpointError as exc:
            errors.append('metrics_url: ' + exc.msg)
    tokenizer = params.get('tokenizer')
    if tokenizer is not None and not (isinstance(tokenizer, dict) and tokenizer.get('container')
                                      and tokenizer.get('model')):
        errors.append('tokenizer needs container and model, got %r' % (tokenizer,))
    if params.get('api') != 'triton' and (params.get('metrics_url') or tokenizer):
        errors.append('metrics_url and tokenizer are for api=triton (trtllm-serve reports its own token counts)')
    prometheus_url = params.get('prometheus_url')
    if prometheus_url:
        parts = urlsplit(prometheus_url)
        if parts.scheme not in ('http', 'https') or not parts.netloc or parts.query or parts.fragment:
            errors.append('prometheus_url must be an http:// or https:// URL without query, got %r' % prometheus_url)
        if params.get('api') == 'triton':
            errors.append('prometheus_url is for trtllm-serve (Triton reports acceptance in its responses)')
    if errors:
        raise EndpointError('Invalid parameters: ' + '; '.join(errors))


def build_headers(headers=None, api_key=None):
    result = {}
    for key, value in (headers or {}).items():
        result[str(key)] = str(value)
    if api_key:
        result['Authorization'] = 'Bearer %s' % api_key
    return result


# ---------------------------------------------------------------------------
# Readiness and model list
# ---------------------------------------------------------------------------

def wait_for_health(client, timeout, poll_interval=2.0, sleep=time.sleep, path='/health'):
    """Poll ``GET path`` (``/health``; Triton: ``/v2/health/ready``) until it answers 200 or ``timeout`` seconds pass.

    Returns ``{'status': 200, 'attempts': n, 'waited_s': s}``.
    """
    start = client.clock()
    deadline = start + timeout
    attempts = 0
    last_seen = 'nothing'
    while True:
        attempts += 1
        remaining = deadline - client.clock()
        attempt_timeout = min(client.request_timeout, max(remaining, 1.0))
        try:
            status, data, dummy = client.request('GET', path, timeout=attempt_timeout)
        except TransportError as exc:
            last_seen = exc.message
        else:
            if status == 200:
                return {'status': status, 'attempts': attempts,
                        'waited_s': round(client.clock() - start, 3)}
            last_seen = 'HTTP %d: %s' % (status, excerpt(data) or '(empty body)')
        now = client.clock()
        if now >= deadline:
            raise EndpointError(
                'Endpoint %s not ready: GET %s did not return 200 within %gs '
                '(%d attempt%s); last seen: %s'
                % (client.base_url, path, timeout, attempts, '' if attempts == 1 else 's', last_seen),
                health={'status': None, 'attempts': attempts, 'waited_s': round(now - start, 3),
                        'last_seen': last_seen})
        sleep(max(0.0, min(poll_interval, deadline - now)))


def _load_json(data):
    if isinstance(data, bytes):
        data = data.decode('utf-8')
    return json.loads(data)


def parse_models(data):
    """Return the list of model ids from a ``/v1/models`` body, or raise ValueError."""
    try:
        doc = _load_json(data)
    except ValueError as exc:
        raise ValueError('not JSON (%s)' % exc)
    if not isinstance(doc, dict) or not isinstance(doc.get('data'), list):
        raise ValueError('expected an object with a "data" list')
    ids = []
    for entry in doc['data']:
        if not isinstance(entry, dict) or not isinstance(entry.get('id'), str):
            raise ValueError('entry without a string "id": %s' % excerpt(json.dumps(entry), 100))
        ids.append(entry['id'])
    return ids


def check_models(client, model):
    """Return the served model ids; fail unless ``model`` is among them."""
    try:
        status, data, dummy = client.request('GET', '/v1/models')
    except TransportError as exc:
        raise EndpointError('GET %s/v1/models failed: %s' % (client.base_url, exc.message))
    if status != 200:
        raise EndpointError('GET %s/v1/models returned HTTP %d: %s'
                            % (client.base_url, status, excerpt(data) or '(empty body)'))
    try:
        served = parse_models(data)
    except ValueError as exc:
        raise EndpointError('GET %s/v1/models returned a malformed models list: %s; body: %s'
                            % (client.base_url, exc, excerpt(data) or '(empty body)'))
    if model not in served:
        raise EndpointError(
            'Model %r is not served by %s; served model ids: %s'
            % (model, client.base_url, ', '.join(repr(m) for m in served) if served else 'none'),
            served_models=served)
    return served


def check_triton_model(client, model):
    """Triton: ``GET /v2/models/<model>/ready`` must answer 200 (400 while the model is not ready)."""
    path = '/v2/models/%s/ready' % model
    try:
        status, data, dummy = client.request('GET', path)
    except TransportError as exc:
        raise EndpointError('GET %s%s failed: %s' % (client.base_url, path, exc.message))
    if status != 200:
        raise EndpointError('Triton model %r is not ready on %s: GET %s returned HTTP %d: %s'
                            % (model, client.base_url, path, status, triton_error(data) or '(empty body)'))
    return [model]


def triton_error(data):
    """The message of Triton's error body ``{"error": "..."}``, else an excerpt of the body."""
    try:
        doc = _load_json(data)
    except ValueError:
        return excerpt(data)
    if isinstance(doc, dict) and isinstance(doc.get('error'), str):
        return doc['error']
    return excerpt(data)


# ---------------------------------------------------------------------------
# Generation requests
# ---------------------------------------------------------------------------

def build_payload(api, model, prompt, max_tokens, temperature, perf_metrics=True):
    if api == 'triton':
        # The generate extension maps top-level keys to the model's inputs (config.pbtxt of the llmapi model).
        return {'text_input': prompt, 'sampling_param_max_tokens': max_tokens,
                'sampling_param_temperature': temperature, 'sampling_param_exclude_input_from_output': True,
                'sampling_param_return_perf_metrics': perf_metrics}
    payload = {'model': model, 'max_tokens': max_tokens, 'temperature': temperature, 'stream': False}
    if api == 'chat':
        payload['messages'] = [{'role': 'user', 'content': prompt}]
    else:
        payload['prompt'] = prompt
    return payload


def _as_int(value):
    if isinstance(value, bool):
        raise ValueError('boolean is not a token count')
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ValueError('not an integer: %r' % (value,))


def _json_object(data):
    """A response body that must be a JSON object; raises ValueError with a short reason."""
    try:
        doc = _load_json(data)
    except ValueError as exc:
        raise ValueError('malformed JSON (%s)' % exc)
    if not isinstance(doc, dict):
        raise ValueError('malformed response: expected a JSON object')
    return doc


def parse_generation(api, data):
    """Parse a non-streaming completion body.

    Returns ``{'text', 'completion_tokens', 'prompt_tokens', 'finish_reason'}``;
    raises ValueError with a short reason for malformed bodies.
    """
    doc = _json_object(data)
    choices = doc.get('choices')
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError('malformed response: missing or empty "choices"')
    choice = choices[0]
    if api == 'chat':
        message = choice.get('message')
        if not isinstance(message, dict):
            raise ValueError('malformed response: choices[0] has no "message" object')
        text = message.get('content')
        if not text and message.get('reasoning_content'):
            # trtllm-serve --reasoning_parser puts the thinking part here.
            text = message.get('reasoning_content')
    else:
        text = choice.get('text')
    if text is not None and not isinstance(text, str):
        raise ValueError('malformed response: completion text is %s, not a string' % type(text).__name__)
    usage = doc.get('usage')
    if not isinstance(usage, dict) or 'completion_tokens' not in usage:
        raise ValueError('malformed response: missing "usage.completion_tokens"')
    try:
        completion_tokens = _as_int(usage['completion_tokens'])
    except ValueError as exc:
        raise ValueError('malformed response: usage.completion_tokens %s' % exc)
    if completion_tokens < 0:
        raise ValueError('malformed response: usage.completion_tokens is negative')
    prompt_tokens = None
    if 'prompt_tokens' in usage:
        try:
            prompt_tokens = _as_int(usage['prompt_tokens'])
        except ValueError:
            prompt_tokens = None
    return {
        'text': text or '',
        'completion_tokens': completion_tokens,
        'prompt_tokens': prompt_tokens,
        'finish_reason': choice.get('finish_reason'),
    }


def parse_triton_generation(data):
    """Parse a Triton generate response: ``{'text', 'perf', 'missing'}``; raises ValueError when malformed.

    ``perf`` holds the speculative figures and timestamps as numbers (strings are read too); ``missing``
    names the speculative keys the response lacked.
    """
    doc = _json_object(data)
    if 'error' in doc:
        raise ValueError('Triton error: %s' % doc['error'])
    text = doc.get('text_output')
    if isinstance(text, list) and len(text) == 1:
        text = text[0]  # some clients ask for the tensor form
    if not isinstance(text, str):
        raise ValueError('malformed response: "text_output" is %s, not a string'
                         % ('missing' if text is None else type(text).__name__))
    perf, missing = {}, []
    for key in TRITON_SPEC_KEYS + TRITON_TIME_KEYS:
        value = doc.get(key)
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        number = _as_number(value)
        if number is None and value is not None:
            raise ValueError('malformed response: %s is %s, not a number' % (key, excerpt(json.dumps(value), 60)))
        if number is None and key in TRITON_SPEC_KEYS:
            missing.append(key)
        perf[key] = number
    return {'text': text, 'perf': perf, 'missing': missing, 'finish_reason': doc.get('finish_reason')}


def run_generation(client, api, index, total, model, prompt, max_tokens, temperature, perf_metrics=True):
    """Send one generation request and return its result dict."""
    path = API_PATHS[api] % model if api == 'triton' else API_PATHS[api]
    where = 'POST %s%s (%s request %d of %d)' % (client.base_url, path, api, index + 1, total)
    payload = build_payload(api, model, prompt, max_tokens, temperature, perf_metrics)
    try:
        status, data, elapsed = client.request('POST', path, payload)
    except TransportError as exc:
        raise EndpointError('%s failed: %s' % (where, exc.message))
    if status != 200:
        detail = triton_error(data) if api == 'triton' else excerpt(data)
        raise EndpointError('%s returned HTTP %d: %s' % (where, status, detail or '(empty body)'))
    if api == 'triton':
        try:
            parsed = parse_triton_generation(data)
        except ValueError as exc:
            raise EndpointError('%s returned a %s; body: %s' % (where, exc, excerpt(data) or '(empty body)'))
        if not parsed['text'].strip():
            raise EndpointError('%s returned an empty text_output' % where)
        # Tokens are counted afterwards with the model's tokenizer (count_tokens_in_container), if given.
        return {'api': api, 'index': index, 'status': status, 'latency_s': round(elapsed, 6),
                'completion_tokens': None, 'prompt_tokens': None, 'tokens_per_second': None,
                'finish_reason': parsed['finish_reason'], 'text': excerpt(parsed['text'], TEXT_EXCERPT_CHARS),
                'perf_metrics': parsed['perf'], '_missing': parsed['missing'], '_text': parsed['text'],
                '_tps': None, '_latency': elapsed}
    try:
        parsed = parse_generation(api, data)
    except ValueError as exc:
        raise EndpointError('%s returned a %s; body: %s' % (where, exc, excerpt(data) or '(empty body)'))
    if not parsed['text'].strip():
        raise EndpointError('%s returned an empty completion text (finish_reason=%s, completion_tokens=%d)'
                            % (where, parsed['finish_reason'], parsed['completion_tokens']))
    tps = parsed['completion_tokens'] / elapsed if elapsed > 0 else None
    return {
        'api': api,
        'index': index,
        'status': status,
        'latency_s': round(elapsed, 6),
        'completion_tokens': parsed['completion_tokens'],
        'prompt_tokens': parsed['prompt_tokens'],
        'tokens_per_second': None if tps is None else round(tps, 3),
        'finish_reason': parsed['finish_reason'],
        'text': excerpt(parsed['text'], TEXT_EXCERPT_CHARS),
        '_tps': tps,
        '_latency': elapsed,
    }


def summarize(results):
    """Aggregate per-request results (with raw ``_tps``/``_latency``)."""
    if not results:
        return {'requests': 0, 'completion_tokens': 0, 'latency_s': 0.0, 'mean_latency_s': None,
                'min_latency_s': None, 'max_latency_s': None, 'tokens_per_second': None,
                'aggregate_tokens_per_second': None}
    latencies = [r['_latency'] for r in results]
    counts = [r['completion_tokens'] for r in results]
    tokens = None if None in counts else sum(counts)
    rates = [r['_tps'] for r in results if r['_tps'] is not None]
    total_latency = sum(latencies)
    prompt = [r['prompt_tokens'] for r in results]
    return {
        'requests': len(results),
        'completion_tokens': tokens,
        'prompt_tokens': None if any(p is None for p in prompt) else sum(prompt),
        'latency_s': round(total_latency, 6),
        'mean_latency_s': round(total_latency / len(results), 6),
        'min_latency_s': round(min(latencies), 6),
        'max_latency_s': round(max(latencies), 6),
        'tokens_per_second': round(sum(rates) / len(rates), 3) if rates else None,
        'aggregate_tokens_per_second': (round(tokens / total_latency, 3)
                                        if tokens is not None and total_latency > 0 else None),
    }


def public_result(result):
    return dict((k, v) for k, v in result.items() if not k.startswith('_'))


# ---------------------------------------------------------------------------
# Speculative-decoding statistics
# ---------------------------------------------------------------------------

def _as_number(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in '.eE') else int(value)
        except ValueError:
            return None
    return None


def _num(mapping, key):
    value = _as_number(mapping.get(key))
    return 0 if value is None else value


def read_counters(opener, url, timeout):
    """One scrape of the Prometheus text at ``url`` -> ``(snapshot or None, reason or None)``.

    The speculative-decoding counters are cumulative: the validation reads them before and after its requests. The
    drained iteration stats (``GET /metrics``) are never read here: the exporter is their only reader.
    """
    parts = urlsplit(url)
    client = EndpointClient('%s://%s' % (parts.scheme, parts.netloc), opener, request_timeout=timeout)
    try:
        status, data, dummy = client.request('GET', parts.path or '/')
    except TransportError as exc:
        return None, '%s: request failed: %s' % (url, exc.message)
    if status != 200:
        return None, '%s: HTTP %d: %s' % (url, status, excerpt(data, 120) or '(empty body)')
    try:
        return metrics.snapshot(data.decode('utf-8', 'replace') if isinstance(data, bytes) else str(data)), None
    except metrics.MetricsError as exc:
        return None, '%s: not Prometheus text (%s)' % (url, exc)


def counters_speculative(before, after, url):
    """``(speculative_or_None, reason)`` from two scrapes of the counters (see ``_metrics.acceptance``)."""
    got = metrics.acceptance(before, after)
    if got['drafted'] is None:
        return None, '%s has no %s (no speculative decoding served)' % (url, metrics.DRAFTED)
    reason = '%s: %d draft tokens proposed, %d accepted during the validation' % (url, got['drafted'] or 0,
                                                                                  got['accepted'] or 0)
    if not got['drafted']:
        reason = '%s: no draft tokens were proposed during the validation' % url
    return {'acceptance_rate': got['acceptance_rate'],
            'acceptance_rate_source': 'prometheus' if got['acceptance_rate'] is not None else None,
            'mean_acceptance_length': got['mean_acceptance_length'],
            'drafted_tokens': got['drafted'], 'accepted_tokens': got['accepted'],
            'per_position': got['per_position'], 'metrics_url': url}, reason


def triton_speculative(results):
    """``(speculative_or_None, reason)`` from the perf metrics of Triton generate responses."""
    with_figures = [r['perf_metrics'] for r in results if not r['_missing']]
    missing = sorted(set(k for r in results for k in r['_missing']))
    reason = 'generate responses: %d of %d carry %s' % (len(with_figures), len(results), ', '.join(TRITON_SPEC_KEYS))
    if missing:
        reason += '; missing %s (an image whose model.py does not return them, or no speculative_config)' % (
            ', '.join(missing))
    if not with_figures:
        return None, reason
    draft = sum(p['total_draft_tokens'] for p in with_figures)
    accepted = sum(p['total_accepted_draft_tokens'] for p in with_figures)
    rates = [p['acceptance_rate'] for p in with_figures]
    perf = {
        'requests': len(results),
        'requests_with_speculative_decoding': len(with_figures),
        'total_draft_tokens': draft,
        'total_accepted_draft_tokens': accepted,
        'acceptance_rate': round(accepted / float(draft), 6) if draft > 0 else None,
        'mean_request_acceptance_rate': round(sum(rates) / len(rates), 6),
    }
    if draft == 0:
        reason += '; no draft tokens were proposed (the plain model, or speculation off)'
    return {'acceptance_rate': perf['acceptance_rate'], 'acceptance_rate_source': 'triton_perf_metrics'
            if perf['acceptance_rate'] is not None else None, 'mean_acceptance_length': None, 'metrics': None,
            'perf_metrics': perf}, reason


def check_triton_metrics(metrics_url, model, opener, timeout):
    """Triton's metrics port: ``GET /metrics`` answers and counts the model's requests. Raises EndpointError."""
    base = normalize_url(metrics_url)
    client = EndpointClient(base, opener, request_timeout=timeout)
    try:
        status, data, dummy = client.request('GET', '/metrics')
    except TransportError as exc:
        raise EndpointError('Triton metrics port %s/metrics does not answer: %s' % (base, exc.message))
    if status != 200:
        raise EndpointError('Triton metrics port %s/metrics returned HTTP %d: %s' % (base, status, excerpt(data)))
    try:
        samples = metrics.parse_text(data.decode('utf-8', 'replace') if isinstance(data, bytes) else str(data))
    except metrics.MetricsError as exc:
        raise EndpointError('Triton metrics port %s/metrics is not Prometheus text (%s)' % (base, exc))
    label = 'model="%s"' % model
    found = {name: metrics.total(samples, name, model=model)
             for name in ('nv_inference_request_success', 'nv_inference_request_failure', 'nv_inference_count')}
    found = {name: value for name, value in found.items() if value is not None}
    if 'nv_inference_request_success' not in found:
        raise EndpointError('Triton metrics port %s/metrics has no nv_inference_request_success{%s}: not the metrics '
                            'of this model\'s server; body: %s' % (base, label, excerpt(data)))
    return {'url': base + '/metrics',
            'request_success': int(found['nv_inference_request_success']),
            'request_failure': int(found.get('nv_inference_request_failure', 0)),
            'inference_count': int(found.get('nv_inference_count', 0))}


# What runs in the serving container to count tokens: the model's own tokenizer, from the local cache only.
_COUNT_SCRIPT = (
    "import json, sys\n"
    "from transformers import AutoTokenizer\n"
    "tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])\n"
    "texts = json.load(sys.stdin)\n"
    "print(json.dumps([len(tokenizer.encode(t, add_special_tokens=False)) for t in texts]))\n")


def count_tokens_in_container(runner, container, model, texts):
    """Token counts of ``texts`` with ``model``'s tokenizer, run by ``docker exec`` in ``container``.

    Triton's generate response carries text only; like the Triton tutorial's genai-perf ``--tokenizer``, the
    tokens are counted with the model's tokenizer (the serving image has transformers and the model's cache).
    ``runner(argv, data) -> (rc, stdout, stderr)``. Raises EndpointError.
    """
    argv = ['docker', 'exec', '-i', '-e', 'HF_HUB_OFFLINE=1', container, 'python3', '-c', _COUNT_SCRIPT, model]
    rc, out, err = runner(argv, json.dumps(list(texts)))
    if rc != 0:
        tail = (err or out or '').strip().splitlines()[-3:]
        raise EndpointError('counting tokens with %s\'s tokenizer in container %s failed (rc %s): %s'
                            % (model, container, rc, ' | '.join(tail) or 'no output'))
    try:
        counts = json.loads(out)
        if not isinstance(counts, list) or len(counts) != len(texts) or not all(
                isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            raise ValueError('expected %d counts' % len(texts))
    except ValueError as exc:
        raise EndpointError('counting tokens in container %s gave %s: %s' % (container, exc, excerpt(out, 120)))
    return counts


def apply_token_counts(results, counts):
    """Fill completion_tokens and tokens/s of Triton results from the tokenizer's counts."""
    for result, count in zip(results, counts):
        result['completion_tokens'] = count
        elapsed = result['_latency']
        result['_tps'] = count / elapsed if elapsed > 0 else None
        result['tokens_per_second'] = None if result['_tps'] is None else round(result['_tps'], 3)


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------

def validate_endpoint(params, opener=None, clock=time.monotonic, sleep=time.sleep, runner=None):
    """Run the whole validation. Returns the module result (without ``changed``).

    Raises :class:`EndpointError` whose ``details`` carry what was learned so far.
    """
    check_params(params)
    base_url = normalize_url(params['url'])
    if opener is None:
        opener = make_urls_opener(validate_certs=params.get('validate_certs', True),
                                  use_proxy=params.get('use_proxy', True))
    client = EndpointClient(base_url, opener,
                            headers=build_headers(params.get('headers'), params.get('api_key')),
                            request_timeout=float(params['request_timeout']), clock=clock)
    apis = ['completions', 'chat'] if params['api'] == 'both' else [params['api']]
    partial = {'url': base_url, 'model': params['model']}

    triton = params['api'] == 'triton'
    try:
        partial['health'] = wait_for_health(client, float(params['timeout']),
                                            float(params.get('poll_interval') or 2.0), sleep=sleep,
                                            path=HEALTH_PATHS.get(params['api'], '/health'))
    except EndpointError as exc:
        exc.details = dict(partial, **exc.details)
        raise

    try:
        if triton:
            partial['served_models'] = check_triton_model(client, params['model'])
        else:
            partial['served_models'] = check_models(client, params['model'])
    except EndpointError as exc:
        exc.details = dict(partial, **exc.details)
        raise

    want_stats = params.get('speculative_stats', True)
    prometheus_url = params.get('prometheus_url') if want_stats and not triton else None
    before = None
    if prometheus_url:
        before, why = read_counters(opener, prometheus_url, float(params['request_timeout']))

    results = []
    try:
        for api in apis:
            for index in range(params['requests']):
                results.append(run_generation(client, api, index, params['requests'], params['model'],
                                              params['prompt'], params['max_tokens'], params['temperature'],
                                              want_stats))
        tokenizer = params.get('tokenizer')
        if triton and tokenizer:
            apply_token_counts(results, count_tokens_in_container(
                runner, tokenizer['container'], tokenizer['model'], [r['_text'] for r in results]))
        if triton and params.get('metrics_url'):
            partial['triton_metrics'] = check_triton_metrics(params['metrics_url'], params['model'], opener,
                                                             float(params['request_timeout']))
    except EndpointError as exc:
        exc.details = dict(partial, results=[public_result(r) for r in results], **exc.details)
        raise

    totals = summarize(results)
    if len(apis) > 1:
        totals['by_api'] = dict((api, summarize([r for r in results if r['api'] == api])) for api in apis)

    if not want_stats:
        speculative, reason = None, 'not collected (speculative_stats=false)'
    elif triton:
        speculative, reason = triton_speculative(results)
    elif not prometheus_url:
        speculative, reason = None, 'not collected: no prometheus_url (the server\'s metrics are off)'
    else:
        after, why = read_counters(opener, prometheus_url, float(params['request_timeout']))
        if after is None or before is None:
            speculative, reason = None, why
        else:
            speculative, reason = counters_speculative(before, after, prometheus_url)

    result = dict(partial, results=[public_result(r) for r in results], totals=totals,
                  speculative=speculative, speculative_reason=reason)

    mtps = params.get('min_tokens_per_second')
    mean = totals['tokens_per_second']
    if mtps is not None and (mean is None or mean < mtps):
        raise EndpointError('Mean generation rate %s tokens/s over %d request%s is below min_tokens_per_second=%g'
                            % ('unknown' if mean is None else '%.3f' % mean, len(results),
                               '' if len(results) == 1 else 's', mtps), **result)

    msg = '%d request%s to %s OK: mean %s tokens/s, mean latency %.3fs' % (
        len(results), '' if len(results) == 1 else 's', base_url,
        'n/a' if mean is None else '%.2f' % mean, totals['mean_latency_s'])
    if speculative is not None and speculative['acceptance_rate'] is not None:
        msg += ', draft acceptance rate %.3f' % speculative['acceptance_rate']
    if 'triton_metrics' in result:
        msg += ', metrics port %s answers (%d requests succeeded)' % (
            result['triton_metrics']['url'], result['triton_metrics']['request_success'])
    result['msg'] = msg
    return result
