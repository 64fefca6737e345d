# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit tests for plugins/module_utils/_endpoint.py.

Two kinds of tests: pure ones with a scripted opener and a fake clock (exact
numbers), and ones against the loopback fake trtllm-serve in
tests/unit/fake_trtllm_server.py using the real open_url-based opener.
"""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _endpoint as ep
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _metrics as metrics

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')))
from fake_trtllm_server import FakeConfig, FakeTrtllmServer  # noqa: E402  pylint: disable=wrong-import-position


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class ScriptedOpener:
    """Answers from a list of (status, body) / exception / callable, per path."""

    def __init__(self, routes, clock=None, cost=None):
        self.routes = dict((k, list(v)) for k, v in routes.items())
        self.calls = []
        self.clock = clock
        self.cost = cost or {}

    def __call__(self, method, url, body, headers, timeout):
        path = url.split('://', 1)[1].split('/', 1)[1]
        path = '/' + path
        self.calls.append({'method': method, 'path': path, 'body': json.loads(body) if body else None,
                           'headers': headers, 'timeout': timeout})
        queue = self.routes.get(path)
        if not queue:
            return 404, b'{"detail":"Not Found"}'
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if self.clock is not None and path in self.cost:
            costs = self.cost[path]
            self.clock.now += costs.pop(0) if len(costs) > 1 else costs[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def completion_body(text='hello world', tokens=16, chat=False, usage=True):
    choice = {'index': 0, 'finish_reason': 'length'}
    if chat:
        choice['message'] = {'role': 'assistant', 'content': text}
    else:
        choice['text'] = text
    doc = {'choices': [choice]}
    if usage:
        doc['usage'] = {'prompt_tokens': 5, 'completion_tokens': tokens, 'total_tokens': 5 + tokens}
    return json.dumps(doc).encode()


MODELS = json.dumps({'object': 'list', 'data': [{'id': 'm', 'object': 'model'}]}).encode()


def params(**overrides):
    base = dict(url='http://127.0.0.1:1', model='m', api='chat', prompt='Paris is great because',
                max_tokens=64, temperature=0.0, requests=1, timeout=5.0, poll_interval=0.1,
                request_timeout=5.0, min_tokens_per_second=None, speculative_stats=True,
                discard_stale_stats=True, headers={}, api_key=None, validate_certs=True, use_proxy=False)
    base.update(overrides)
    return base


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def server():
    srv = FakeTrtllmServer(FakeConfig(), lifetime=60).start()
    yield srv
    srv.stop()


def run(srv, **overrides):
    overrides.setdefault('url', srv.url)
    if overrides.get('api') != 'triton':
        overrides.setdefault('prometheus_url', srv.url + '/prometheus/metrics')
    overrides.setdefault('model', srv.config.model_id)
    return ep.validate_endpoint(params(**overrides))


def fails(srv, **overrides):
    with pytest.raises(ep.EndpointError) as info:
        run(srv, **overrides)
    return info.value


# ---------------------------------------------------------------------------
# parameters and small helpers
# ---------------------------------------------------------------------------

@pytest.mark.parametrize('url,expected', [
    ('http://127.0.0.1:8355', 'http://127.0.0.1:8355'),
    ('http://127.0.0.1:8355/', 'http://127.0.0.1:8355'),
    ('https://llm.example.com/v1/', 'https://llm.example.com'),
    ('http://host:8000/prefix', 'http://host:8000/prefix'),
])
def test_normalize_url(url, expected):
    assert ep.normalize_url(url) == expected


@pytest.mark.parametrize('url', ['127.0.0.1:8355', 'ftp://host/', 'http://', 'http://h/?a=1', ''])
def test_normalize_url_rejects(url):
    with pytest.raises(ep.EndpointError) as info:
        ep.normalize_url(url)
    assert 'http://' in info.value.msg


def test_check_params_names_every_bad_value():
    with pytest.raises(ep.EndpointError) as info:
        ep.check_params(params(requests=0, max_tokens=0, temperature=-1.0, url='tcp://x',
                               request_timeout=0, timeout=-1, min_tokens_per_second=-2.0))
    msg = info.value.msg
    for needle in ('requests must be >= 1, got 0', 'max_tokens must be >= 1', 'temperature must be >= 0',
                   'url must start with http:// or https://', 'request_timeout must be > 0',
                   'timeout must be >= 0', 'min_tokens_per_second must be >= 0'):
        assert needle in msg


def test_check_params_accepts_defaults():
    ep.check_params(params())


def test_excerpt_is_bounded_and_flattened():
    text = ep.excerpt(b'a\n\n b' + b'x' * 1000)
    assert len(text) == 300 and text.startswith('a b') and text.endswith('...')
    assert ep.excerpt(b'\xff\xfeok') .endswith('ok')
    assert ep.excerpt(None) == ''


def test_build_headers_api_key_overrides_authorization():
    headers = ep.build_headers({'Authorization': 'Basic x', 'X-N': 1}, api_key='sekret')
    assert headers == {'Authorization': 'Bearer sekret', 'X-N': '1'}


def test_build_payload_shapes():
    chat = ep.build_payload('chat', 'm', 'hi', 8, 0.5)
    assert chat == {'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}], 'max_tokens': 8,
                    'temperature': 0.5, 'stream': False}
    comp = ep.build_payload('completions', 'm', 'hi', 8, 0.0)
    assert comp['prompt'] == 'hi' and 'messages' not in comp


# ---------------------------------------------------------------------------
# response parsing
# ---------------------------------------------------------------------------

def test_parse_generation_completions_and_chat():
    parsed = ep.parse_generation('completions', completion_body('abc', 7))
    assert parsed == {'text': 'abc', 'completion_tokens': 7, 'prompt_tokens': 5, 'finish_reason': 'length'}
    parsed = ep.parse_generation('chat', completion_body('xyz', 3, chat=True))
    assert parsed['text'] == 'xyz' and parsed['completion_tokens'] == 3


def test_parse_generation_chat_reasoning_content_fallback():
    body = json.dumps({'choices': [{'message': {'content': None, 'reasoning_content': 'thinking'}}],
                       'usage': {'completion_tokens': 4}})
    assert ep.parse_generation('chat', body.encode())['text'] == 'thinking'


@pytest.mark.parametrize('body,needle', [
    (b'{"choices": [', 'malformed JSON'),
    (b'[1, 2]', 'expected a JSON object'),
    (b'{"usage": {"completion_tokens": 1}}', 'missing or empty "choices"'),
    (b'{"choices": [], "usage": {"completion_tokens": 1}}', 'missing or empty "choices"'),
    (b'{"choices": [{"text": "a"}]}', 'missing "usage.completion_tokens"'),
    (b'{"choices": [{"text": "a"}], "usage": {"prompt_tokens": 3}}', 'missing "usage.completion_tokens"'),
    (b'{"choices": [{"text": "a"}], "usage": {"completion_tokens": "many"}}', 'not an integer'),
    (b'{"choices": [{"text": 5}], "usage": {"completion_tokens": 1}}', 'not a string'),
])
def test_parse_generation_malformed(body, needle):
    with pytest.raises(ValueError) as info:
        ep.parse_generation('completions', body)
    assert needle in str(info.value)


def test_parse_generation_chat_without_message():
    with pytest.raises(ValueError, match='no "message" object'):
        ep.parse_generation('chat', b'{"choices": [{"text": "a"}], "usage": {"completion_tokens": 1}}')


@pytest.mark.parametrize('body,needle', [
    (b'not json', 'not JSON'),
    (b'{"object": "list"}', '"data" list'),
    (b'{"data": [{"object": "model"}]}', 'without a string "id"'),
])
def test_parse_models_malformed(body, needle):
    with pytest.raises(ValueError, match=needle):
        ep.parse_models(body)


# ---------------------------------------------------------------------------
# acceptance from the cumulative counters (hand-computed)
# ---------------------------------------------------------------------------

def test_counters_speculative_is_the_difference_of_two_scrapes():
    text = ('trtllm_spec_decode_num_draft_tokens_total %d\ntrtllm_spec_decode_num_accepted_tokens_total %d\n'
            'trtllm_spec_decode_drafted_tokens_total{token_position="0"} %d\n'
            'trtllm_spec_decode_accepted_tokens_total{token_position="0"} %d\n')
    before = metrics.snapshot(text % (100, 50, 10, 9))
    after = metrics.snapshot(text % (140, 72, 14, 12))
    spec, reason = ep.counters_speculative(before, after, 'http://x:9464/metrics')
    # 22 of 40 drafts accepted: 0.55. Tokens per step from the positions' own counts: 3 accepted at the first (and
    # only counted) position over 4 steps, 1 + 3/4.
    assert spec['acceptance_rate'] == 0.55 and spec['mean_acceptance_length'] == 1.75
    assert spec['per_position'] == [{'position': 0, 'drafted': 4, 'accepted': 3, 'rate': 0.75}]
    assert reason == 'http://x:9464/metrics: 40 draft tokens proposed, 22 accepted during the validation'


def test_counters_without_speculative_decoding_report_none():
    spec, reason = ep.counters_speculative(metrics.snapshot(''), metrics.snapshot('trtllm_x_total 1\n'), 'u')
    assert spec is None and reason == 'u has no trtllm_spec_decode_num_draft_tokens_total (no speculative decoding served)'


def _three_completions(clock):
    return ScriptedOpener({
        '/health': [(200, b'')],
        '/v1/models': [(200, MODELS)],
        '/v1/completions': [(200, completion_body('a', 16)), (200, completion_body('b', 16)),
                            (200, completion_body('c', 30))],
        '/metrics': [(404, b'')], '/perf_metrics': [(404, b'')],
    }, clock=clock, cost={'/v1/completions': [0.5, 2.0, 1.5]})


def test_latency_and_tokens_per_second_exact():
    clock = FakeClock()
    result = ep.validate_endpoint(params(api='completions', requests=3), opener=_three_completions(clock),
                                  clock=clock, sleep=clock.sleep)
    assert [r['latency_s'] for r in result['results']] == [0.5, 2.0, 1.5]
    # per request: 16/0.5 = 32, 16/2 = 8, 30/1.5 = 20
    assert [r['tokens_per_second'] for r in result['results']] == [32.0, 8.0, 20.0]
    totals = result['totals']
    assert totals['completion_tokens'] == 62 and totals['prompt_tokens'] == 15
    assert totals['latency_s'] == 4.0 and totals['mean_latency_s'] == pytest.approx(4.0 / 3, abs=1e-6)
    assert totals['min_latency_s'] == 0.5 and totals['max_latency_s'] == 2.0
    assert totals['tokens_per_second'] == 20.0          # (32 + 8 + 20) / 3
    assert totals['aggregate_tokens_per_second'] == 15.5  # 62 / 4.0
    assert result['speculative'] is None
    assert result['msg'] == '3 requests to http://127.0.0.1:1 OK: mean 20.00 tokens/s, mean latency 1.333s'


def test_threshold_uses_mean_of_per_request_rates():
    clock = FakeClock()
    # mean is 20.0 while the aggregate rate is 15.5: 19.9 passes, 20.5 fails
    ep.validate_endpoint(params(api='completions', requests=3, min_tokens_per_second=19.9),
                         opener=_three_completions(clock), clock=clock, sleep=clock.sleep)
    with pytest.raises(ep.EndpointError) as info:
        ep.validate_endpoint(params(api='completions', requests=3, min_tokens_per_second=20.5),
                             opener=_three_completions(clock), clock=clock, sleep=clock.sleep)
    assert info.value.msg == ('Mean generation rate 20.000 tokens/s over 3 requests is below '
                              'min_tokens_per_second=20.5')
    assert len(info.value.details['results']) == 3


# ---------------------------------------------------------------------------
# readiness with a scripted opener and fake clock
# ---------------------------------------------------------------------------

def test_wait_for_health_retries_refused_and_503_until_200():
    clock = FakeClock()
    opener = ScriptedOpener({'/health': [ep.TransportError('refused', 'connection refused'),
                                         (503, b'LLM is unavailable'), (200, b'')]})
    client = ep.EndpointClient('http://h', opener, request_timeout=10, clock=clock)
    health = ep.wait_for_health(client, 30, poll_interval=2, sleep=clock.sleep)
    assert health == {'status': 200, 'attempts': 3, 'waited_s': 4.0}


@pytest.mark.parametrize('answer,needle', [
    ((503, b'LLM is unavailable'), 'last seen: HTTP 503: LLM is unavailable'),
    (ep.TransportError('refused', 'connection refused'), 'last seen: connection refused'),
    (ep.TransportError('timeout', 'timed out after 10s'), 'last seen: timed out after 10s'),
    ((502, b''), 'last seen: HTTP 502: (empty body)'),
])
def test_wait_for_health_gives_up_at_deadline(answer, needle):
    clock = FakeClock()
    opener = ScriptedOpener({'/health': [answer]})
    client = ep.EndpointClient('http://h', opener, request_timeout=10, clock=clock)
    with pytest.raises(ep.EndpointError) as info:
        ep.wait_for_health(client, 7, poll_interval=2, sleep=clock.sleep)
    assert needle in info.value.msg
    assert 'within 7s (5 attempts)' in info.value.msg  # t = 0, 2, 4, 6, 7
    assert info.value.details['health']['status'] is None
    assert clock.now == 1007.0


def test_timeout_zero_checks_once():
    clock = FakeClock()
    opener = ScriptedOpener({'/health': [(503, b'x')]})
    client = ep.EndpointClient('http://h', opener, request_timeout=10, clock=clock)
    with pytest.raises(ep.EndpointError, match=r'\(1 attempt\)'):
        ep.wait_for_health(client, 0, sleep=clock.sleep)


# ---------------------------------------------------------------------------
# against the loopback fake server (real open_url opener)
# ---------------------------------------------------------------------------

def test_chat_success_with_speculative_figures(server):
    result = run(server, requests=2, headers={'X-Trace': 'abc'}, api_key='tok')
    assert [r['api'] for r in result['results']] == ['chat', 'chat']
    assert result['served_models'] == [server.config.model_id]
    assert result['health']['status'] == 200
    first = result['results'][0]
    assert first['status'] == 200 and first['completion_tokens'] == 16
    assert first['text'] == 'it has the Eiffel Tower, wonderful food and many museums.'
    assert first['tokens_per_second'] == pytest.approx(16 / first['latency_s'], rel=1e-3)
    assert result['totals']['requests'] == 2 and result['totals']['completion_tokens'] == 32
    spec = result['speculative']
    # per request the fake adds two steps: 12 drafted, 9 accepted and 8 drafted, 2 accepted; two requests: 40 drafted,
    # 22 accepted over 4 steps (1 + 22/4 = 6.5 tokens per step); position 0 was accepted in 4 steps of 4, position 2
    # in 2 of 4 (9 >= 3, 2 < 3).
    assert spec['acceptance_rate'] == 0.55 and spec['acceptance_rate_source'] == 'prometheus'
    assert spec['mean_acceptance_length'] == 6.5
    assert spec['drafted_tokens'] == 40 and spec['accepted_tokens'] == 22
    assert [(p['position'], p['drafted'], p['accepted']) for p in spec['per_position'][:3]] == [
        (0, 4, 4), (1, 4, 4), (2, 4, 2)]
    assert spec['metrics_url'] == server.url + '/prometheus/metrics'
    assert 'draft acceptance rate 0.550' in result['msg']
    posts = [r for r in server.requests if r['method'] == 'POST']
    assert len(posts) == 2 and all(r['path'] == '/v1/chat/completions' for r in posts)
    body = json.loads(posts[0]['body'])
    assert body == {'model': server.config.model_id, 'messages': [{'role': 'user', 'content': 'Paris is great because'}],
                    'max_tokens': 64, 'temperature': 0.0, 'stream': False}
    assert posts[0]['headers']['Authorization'] == 'Bearer tok'
    assert posts[0]['headers']['X-Trace'] == 'abc'
    # order: health, models, the counters, generation, the counters; the drained stats are never read
    assert server.paths('GET') == ['/health', '/v1/models', '/prometheus/metrics', '/prometheus/metrics']


def test_completions_success(server):
    result = run(server, api='completions', max_tokens=4, prompt='Hello')
    assert server.paths('POST') == ['/v1/completions']
    body = json.loads([r for r in server.requests if r['method'] == 'POST'][0]['body'])
    assert body['prompt'] == 'Hello' and body['max_tokens'] == 4 and 'messages' not in body
    assert result['results'][0]['completion_tokens'] == 4  # the fake caps tokens at max_tokens
    assert 'by_api' not in result['totals']


def test_both_apis_n_requests(server):
    result = run(server, api='both', requests=3)
    assert server.paths('POST') == ['/v1/completions'] * 3 + ['/v1/chat/completions'] * 3
    assert [(r['api'], r['index']) for r in result['results']] == [
        ('completions', 0), ('completions', 1), ('completions', 2), ('chat', 0), ('chat', 1), ('chat', 2)]
    assert result['totals']['requests'] == 6
    assert result['totals']['by_api']['chat']['requests'] == 3
    assert result['totals']['by_api']['completions']['completion_tokens'] == 48
    assert result['speculative']['drafted_tokens'] == 6 * 20


def test_earlier_traffic_never_counts():
    with FakeTrtllmServer(FakeConfig()) as srv:
        run(srv, requests=3)
        result = run(srv)
    assert result['speculative']['drafted_tokens'] == 20
    # the ignored discard_stale_stats changes nothing: the counters are read before and after
    with FakeTrtllmServer(FakeConfig()) as srv:
        run(srv)
        result = run(srv, discard_stale_stats=False)
    assert result['speculative']['drafted_tokens'] == 20 and result['speculative']['acceptance_rate'] == 0.55


def test_speculative_stats_disabled(server):
    result = run(server, speculative_stats=False)
    assert result['speculative'] is None and 'speculative_stats=false' in result['speculative_reason']
    assert not [path for path in server.paths() if 'metrics' in path]


def test_no_speculative_data_is_not_an_error():
    with FakeTrtllmServer(FakeConfig(prometheus_status=404)) as srv:
        result = run(srv)
        assert result['speculative'] is None
        assert result['speculative_reason'] == srv.url + '/prometheus/metrics: HTTP 404: {"detail": "Not Found"}'
        result = run(srv, prometheus_url=None)
    assert result['speculative'] is None and 'no prometheus_url' in result['speculative_reason']
    with FakeTrtllmServer(FakeConfig(spec_stats_per_request=[None])) as srv:
        result = run(srv)
    assert result['speculative'] is None and 'no trtllm_spec_decode_num_draft_tokens_total' in result['speculative_reason']
    assert 'acceptance' not in result['msg']


def test_prometheus_url_is_checked():
    with pytest.raises(ep.EndpointError) as info:
        ep.validate_endpoint(params(prometheus_url='ftp://x/metrics'))
    assert 'prometheus_url must be an http:// or https:// URL' in info.value.msg


def test_ready_after_delay(server):
    server.config.ready_after = 0.6
    result = run(server, poll_interval=0.2)
    assert result['health']['attempts'] >= 2
    assert result['health']['waited_s'] >= 0.5


def test_never_ready(server):
    server.config.ready_after = None
    err = fails(server, timeout=0.5, poll_interval=0.1)
    assert 'not ready' in err.msg and 'last seen: HTTP 503: LLM is unavailable' in err.msg
    assert err.details['health']['attempts'] >= 3
    assert server.paths('POST') == []


def test_connection_refused_on_closed_port():
    url = 'http://127.0.0.1:%d' % free_port()
    with pytest.raises(ep.EndpointError) as info:
        ep.validate_endpoint(params(url=url, timeout=0.4, poll_interval=0.1))
    assert 'last seen: connection refused' in info.value.msg
    assert url in info.value.msg


def test_http_500_with_body_excerpt(server):
    server.config.generation_status = 500
    server.config.generation_error_body = 'CUDA error: out of memory ' + 'x' * 1000
    err = fails(server, requests=3)
    assert ('POST %s/v1/chat/completions (chat request 1 of 3) returned HTTP 500: CUDA error: out of memory'
            % server.url) in err.msg
    excerpt_part = err.msg.split('returned HTTP 500: ', 1)[1]
    assert len(excerpt_part) <= 300
    assert err.details['results'] == []


def test_wrong_model_names_both(server):
    err = fails(server, model='nvidia/other-model')
    assert "'nvidia/other-model'" in err.msg and repr(server.config.model_id) in err.msg
    assert err.details['served_models'] == [server.config.model_id]
    assert server.paths('POST') == []


def test_no_model_served(server):
    server.config.models_body = {'object': 'list', 'data': []}
    err = fails(server)
    assert 'served model ids: none' in err.msg


@pytest.mark.parametrize('body', [b'<html>oops</html>', {'object': 'list', 'data': 'm'}, {'data': [{'name': 'm'}]}])
def test_malformed_models_list(server, body):
    server.config.models_body = body
    err = fails(server)
    assert 'malformed models list' in err.msg


@pytest.mark.parametrize('fault,needle', [
    ('empty_text', 'returned an empty completion text (finish_reason=length, completion_tokens=0)'),
    ('malformed_json', 'returned a malformed JSON'),
    ('missing_usage', 'missing "usage.completion_tokens"'),
    ('missing_choices', 'missing or empty "choices"'),
    ('close_mid_response', 'failed: connection closed by the server before a complete response'),
    ('close_before_response', 'failed: connection closed by the server before a complete response'),
])
@pytest.mark.parametrize('api', ['completions', 'chat'])
def test_generation_faults(server, fault, needle, api):
    server.config.fault = fault
    err = fails(server, api=api)
    assert needle in err.msg
    assert err.msg.startswith('POST %s%s (%s request 1 of 1)' % (server.url, ep.API_PATHS[api], api))


def test_failure_keeps_earlier_results(server):
    original = server.add_stats

    def break_after_first(request_id):
        original(request_id)
        server.config.fault = 'missing_usage'

    server.add_stats = break_after_first
    err = fails(server, requests=3)
    assert 'chat request 2 of 3' in err.msg
    assert len(err.details['results']) == 1 and err.details['results'][0]['completion_tokens'] == 16


def test_slow_response_times_out(server):
    server.config.generation_delay = 3.0
    err = fails(server, request_timeout=0.5)
    assert 'failed: timed out after 0.5s' in err.msg


def test_min_tokens_per_second(server):
    server.config.generation_delay = 0.2  # 16 tokens / >=0.2 s -> at most 80 tokens/s
    err = fails(server, min_tokens_per_second=1000.0)
    assert 'is below min_tokens_per_second=1000' in err.msg
    assert err.details['totals']['tokens_per_second'] < 1000
    assert err.details['speculative']['acceptance_rate'] == 0.55
    result = run(server, min_tokens_per_second=1.0)
    assert result['totals']['tokens_per_second'] > 1.0


def test_fake_server_refuses_non_loopback():
    with pytest.raises(ValueError):
        FakeTrtllmServer(host='0.0.0.0')


def test_fake_server_stops_itself():
    srv = FakeTrtllmServer(lifetime=0.3).start()
    url = srv.url
    assert srv.stopped.wait(5)
    with pytest.raises(ep.TransportError) as info:
        ep.make_urls_opener(use_proxy=False)('GET', url + '/health', None, {}, 2)
    assert info.value.kind == 'refused'
