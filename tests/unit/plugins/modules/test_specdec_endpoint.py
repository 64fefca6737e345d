# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the specdec_endpoint module's main() against the loopback fake trtllm-serve."""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import specdec_endpoint

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')))
from fake_trtllm_server import FakeConfig, FakeTrtllmServer  # noqa: E402  pylint: disable=wrong-import-position


def run_module(capsys, args):
    """Run main() like Ansible does; return (rc, parsed JSON result)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            specdec_endpoint.main()
    out = capsys.readouterr().out
    return info.value.code, json.loads(out)


@pytest.fixture
def server():
    srv = FakeTrtllmServer(FakeConfig(), lifetime=60).start()
    yield srv
    srv.stop()


def base_args(srv, **extra):
    args = {'url': srv.url, 'model': srv.config.model_id, 'timeout': 5, 'poll_interval': 0.1,
            'request_timeout': 5, 'use_proxy': False}
    args.update(extra)
    return args


def test_success_not_changed(capsys, server):
    rc, result = run_module(capsys, base_args(server, api='both', requests=2,
                                              prometheus_url=server.url + '/prometheus/metrics'))
    assert rc == 0
    assert result['changed'] is False and not result.get('failed')
    assert result['totals']['requests'] == 4
    assert result['speculative']['acceptance_rate'] == 0.55
    assert result['speculative']['drafted_tokens'] == 80
    assert result['served_models'] == [server.config.model_id]
    assert all(not k.startswith('_') for r in result['results'] for k in r)
    assert result['msg'].startswith('4 requests to %s OK' % server.url)


def test_check_mode_still_validates(capsys, server):
    rc, result = run_module(capsys, base_args(server, _ansible_check_mode=True))
    assert rc == 0 and result['changed'] is False
    assert server.paths('POST') == ['/v1/chat/completions']


def test_check_mode_reports_failures_too(capsys, server):
    server.config.fault = 'empty_text'
    rc, result = run_module(capsys, base_args(server, _ansible_check_mode=True))
    assert rc == 1 and result['failed'] is True and result['changed'] is False
    assert 'empty completion text' in result['msg']


def test_defaults(capsys, server):
    rc, result = run_module(capsys, {'url': server.url + '/v1/', 'model': server.config.model_id, 'use_proxy': False})
    assert rc == 0
    assert result['url'] == server.url
    body = json.loads([r for r in server.requests if r['method'] == 'POST'][0]['body'])
    assert body == {'model': server.config.model_id, 'max_tokens': 64, 'temperature': 0.0, 'stream': False,
                    'messages': [{'role': 'user', 'content': 'Paris is great because'}]}


def test_wrong_model_fails(capsys, server):
    rc, result = run_module(capsys, base_args(server, model='meta/llama'))
    assert rc == 1 and result['failed'] is True and result['changed'] is False
    assert "'meta/llama'" in result['msg'] and repr(server.config.model_id) in result['msg']
    assert result['served_models'] == [server.config.model_id]


def test_http_error_fails(capsys, server):
    server.config.generation_status = 503
    server.config.generation_error_body = {'object': 'error', 'message': 'LLM is unavailable'}
    rc, result = run_module(capsys, base_args(server))
    assert rc == 1
    assert 'returned HTTP 503: {"object": "error", "message": "LLM is unavailable"}' in result['msg']


def test_refused_fails_after_timeout(capsys):
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    rc, result = run_module(capsys, {'url': 'http://127.0.0.1:%d' % port, 'model': 'm', 'timeout': 0.3,
                                     'poll_interval': 0.1, 'use_proxy': False})
    assert rc == 1 and result['changed'] is False
    assert 'last seen: connection refused' in result['msg']
    assert result['health']['last_seen'] == 'connection refused'


@pytest.mark.parametrize('extra,needle', [
    ({'requests': 0}, 'requests must be >= 1, got 0'),
    ({'url': 'localhost:8355'}, 'url must start with http:// or https://'),
    ({'max_tokens': 0}, 'max_tokens must be >= 1'),
    ({'api': 'responses'}, 'value of api must be one of: completions, chat, both'),
])
def test_invalid_parameters(capsys, server, extra, needle):
    rc, result = run_module(capsys, base_args(server, **extra))
    assert rc == 1 and needle in result['msg']
    assert server.paths() == []


def test_api_key_is_sent_and_not_logged(capsys, server):
    secret = 'sk-very-secret-token-123'
    server.config.generation_status = 401
    server.config.generation_error_body = 'bad token %s' % secret  # a server echoing the token back
    rc, result = run_module(capsys, base_args(server, api_key=secret))
    assert rc == 1
    posts = [r for r in server.requests if r['method'] == 'POST']
    assert posts[0]['headers']['Authorization'] == 'Bearer ' + secret
    assert secret not in json.dumps(result)


def test_min_tokens_per_second_threshold(capsys, server):
    rc, result = run_module(capsys, base_args(server, min_tokens_per_second=1e9))
    assert rc == 1 and 'below min_tokens_per_second' in result['msg']
    assert result['totals']['requests'] == 1
    rc, result = run_module(capsys, base_args(server, min_tokens_per_second=0.001))
    assert rc == 0
