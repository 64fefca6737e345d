# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Validate an OpenAI-compatible endpoint served by TensorRT-LLM ``trtllm-serve``.

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

API_PATHS = {
    'completions': '/v1/completions',
    'chat': '/v1/chat/completions',
}
API_CHOICES = ('completions', 'chat', 'both')
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

def wait_for_health(client, timeout, poll_interval=2.0, sleep=time.sleep):
    """Poll ``GET /health`` until it answers 200 or ``timeout`` seconds pass.

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
            status, data, dummy = client.request('GET', '/health', timeout=attempt_timeout)
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
                'Endpoint %s not ready: GET /health did not return 200 within %gs '
                '(%d attempt%s); last seen: %s'
                % (client.base_url, timeout, attempts, '' if attempts == 1 else 's', last_seen),
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


# ---------------------------------------------------------------------------
# Generation requests
# ---------------------------------------------------------------------------

def build_payload(api, model, prompt, max_tokens, temperature):
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


def parse_generation(api, data):
    """Parse a non-streaming completion body.

    Returns ``{'text', 'completion_tokens', 'prompt_tokens', 'finish_reason'}``;
    raises ValueError with a short reason for malformed bodies.
    """
    try:
        doc = _load_json(data)
    except ValueError as exc:
        raise ValueError('malformed JSON (%s)' % exc)
    if not isinstance(doc, dict):
        raise ValueError('malformed response: expected a JSON object')
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


def run_generation(client, api, index, total, model, prompt, max_tokens, temperature):
    """Send one generation request and return its result dict."""
    path = API_PATHS[api]
    where = 'POST %s%s (%s request %d of %d)' % (client.base_url, path, api, index + 1, total)
    payload = build_payload(api, model, prompt, max_tokens, temperature)
    try:
        status, data, elapsed = client.request('POST', path, payload)
    except TransportError as exc:
        raise EndpointError('%s failed: %s' % (where, exc.message))
    if status != 200:
        raise EndpointError('%s returned HTTP %d: %s' % (where, status, excerpt(data) or '(empty body)'))
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
    tokens = sum(r['completion_tokens'] for r in results)
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
        'aggregate_tokens_per_second': round(tokens / total_latency, 3) if total_latency > 0 else None,
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


def aggregate_iteration_stats(stats):
    """Aggregate ``specDecodingStats`` from a ``/metrics`` list.

    Returns ``(summary_or_None, reason)``.
    """
    if not isinstance(stats, list):
        return None, 'malformed: expected a JSON list of iteration stats'
    if not stats:
        return None, ('empty list (enable_iter_perf_stats is off, or the stats were already read: '
                      '/metrics is emptied on every read)')
    blocks = []
    for entry in stats:
        if isinstance(entry, str):
            try:
                entry = json.loads(entry)
            except ValueError:
                continue
        if isinstance(entry, dict) and isinstance(entry.get('specDecodingStats'), dict):
            blocks.append(entry['specDecodingStats'])
    if not blocks:
        return None, ('%d iteration stats without specDecodingStats (no speculative decoding, '
                      'or a build that does not report it for this mode)' % len(stats))
    draft = sum(_num(b, 'numDraftTokens') for b in blocks)
    accepted = sum(_num(b, 'numAcceptedTokens') for b in blocks)
    with_drafts = sum(_num(b, 'numRequestsWithDraftTokens') for b in blocks)
    weighted = sum(_num(b, 'acceptanceLength') * _num(b, 'numRequestsWithDraftTokens') for b in blocks)
    drafting = [b for b in blocks if _num(b, 'numDraftTokens') > 0]
    overheads = [_as_number(b.get('draftOverhead')) for b in drafting]
    overheads = [o for o in overheads if o is not None]
    summary = {
        'iterations': len(stats),
        'iterations_with_stats': len(blocks),
        'iterations_with_draft_tokens': len(drafting),
        'num_draft_tokens': draft,
        'num_accepted_tokens': accepted,
        'num_requests_with_draft_tokens': with_drafts,
        'acceptance_rate': round(accepted / draft, 6) if draft > 0 else None,
        'mean_acceptance_length': round(weighted / with_drafts, 6) if with_drafts > 0 else None,
        'mean_draft_overhead': round(sum(overheads) / len(overheads), 6) if overheads else None,
    }
    if draft > 0:
        reason = '%d of %d iteration stats carry specDecodingStats' % (len(blocks), len(stats))
    else:
        reason = 'specDecodingStats present but no draft tokens were proposed'
    return summary, reason


def aggregate_perf_metrics(items):
    """Aggregate ``speculative_decoding`` blocks from a ``/perf_metrics`` list.

    Returns ``(summary_or_None, reason)``.
    """
    if not isinstance(items, list):
        return None, 'malformed: expected a JSON list of per-request metrics'
    if not items:
        return None, 'empty list (needs return_perf_metrics: true and perf_metrics_max_requests > 0)'
    blocks = []
    for item in items:
        perf = item.get('perf_metrics') if isinstance(item, dict) else None
        spec = perf.get('speculative_decoding') if isinstance(perf, dict) else None
        if isinstance(spec, dict):
            blocks.append(spec)
    if not blocks:
        return None, '%d request entries without speculative_decoding' % len(items)
    draft = sum(_num(b, 'total_draft_tokens') for b in blocks)
    accepted = sum(_num(b, 'total_accepted_draft_tokens') for b in blocks)
    rates = [_as_number(b.get('acceptance_rate')) for b in blocks]
    rates = [r for r in rates if r is not None]
    summary = {
        'requests': len(items),
        'requests_with_speculative_decoding': len(blocks),
        'total_draft_tokens': draft,
        'total_accepted_draft_tokens': accepted,
        'acceptance_rate': round(accepted / draft, 6) if draft > 0 else None,
        'mean_request_acceptance_rate': round(sum(rates) / len(rates), 6) if rates else None,
    }
    return summary, '%d of %d request entries carry speculative_decoding' % (len(blocks), len(items))


def _fetch_stats(client, path):
    """GET a stats endpoint. Returns ``(doc, reason)``; ``doc`` is None on any problem."""
    try:
        status, data, dummy = client.request('GET', path)
    except TransportError as exc:
        return None, 'request failed: %s' % exc.message
    if status == 404:
        return None, 'not available on this build (HTTP 404)'
    if status != 200:
        return None, 'HTTP %d: %s' % (status, excerpt(data, 120) or '(empty body)')
    try:
        return _load_json(data), None
    except ValueError as exc:
        return None, 'malformed JSON (%s)' % exc


def drain_stats(client):
    """Read and discard ``/metrics`` and ``/perf_metrics`` (both are emptied on read)."""
    for path in ('/metrics', '/perf_metrics'):
        _fetch_stats(client, path)


def collect_speculative(client):
    """Return ``(speculative_or_None, reason)`` from ``/metrics`` and ``/perf_metrics``."""
    reasons = []
    metrics_doc, why = _fetch_stats(client, '/metrics')
    metrics = None
    if metrics_doc is not None or why is None:
        metrics, why = aggregate_iteration_stats(metrics_doc)
    reasons.append('/metrics: %s' % why)
    perf_doc, why = _fetch_stats(client, '/perf_metrics')
    perf = None
    if perf_doc is not None or why is None:
        perf, why = aggregate_perf_metrics(perf_doc)
    reasons.append('/perf_metrics: %s' % why)
    reason = '; '.join(reasons)
    if metrics is None and perf is None:
        return None, reason
    rate, source = None, None
    if metrics is not None and metrics['acceptance_rate'] is not None:
        rate, source = metrics['acceptance_rate'], 'metrics'
    elif perf is not None and perf['acceptance_rate'] is not None:
        rate, source = perf['acceptance_rate'], 'perf_metrics'
    return {
        'acceptance_rate': rate,
        'acceptance_rate_source': source,
        'mean_acceptance_length': metrics['mean_acceptance_length'] if metrics else None,
        'metrics': metrics,
        'perf_metrics': perf,
    }, reason


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------

def validate_endpoint(params, opener=None, clock=time.monotonic, sleep=time.sleep):
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

    try:
        partial['health'] = wait_for_health(client, float(params['timeout']),
                                            float(params.get('poll_interval') or 2.0), sleep=sleep)
    except EndpointError as exc:
        exc.details = dict(partial, **exc.details)
        raise

    try:
        partial['served_models'] = check_models(client, params['model'])
    except EndpointError as exc:
        exc.details = dict(partial, **exc.details)
        raise

    want_stats = params.get('speculative_stats', True)
    if want_stats and params.get('discard_stale_stats', True):
        drain_stats(client)

    results = []
    try:
        for api in apis:
            for index in range(params['requests']):
                results.append(run_generation(client, api, index, params['requests'], params['model'],
                                              params['prompt'], params['max_tokens'], params['temperature']))
    except EndpointError as exc:
        exc.details = dict(partial, results=[public_result(r) for r in results], **exc.details)
        raise

    totals = summarize(results)
    if len(apis) > 1:
        totals['by_api'] = dict((api, summarize([r for r in results if r['api'] == api])) for api in apis)

    if want_stats:
        speculative, reason = collect_speculative(client)
    else:
        speculative, reason = None, 'not collected (speculative_stats=false)'

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
    result['msg'] = msg
    return result
