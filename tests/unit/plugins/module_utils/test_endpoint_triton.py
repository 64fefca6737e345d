# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Triton's generate API in specdec_endpoint and specdec_bench: held-out responses of the LLM API backend.

The bodies are shaped like the backend's documented answers (docs/llmapi.md of tensorrtllm_backend sends the perf
metrics as strings; config.pbtxt declares numbers), plus the ways they go wrong.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _bench as bench
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _endpoint as ep

from test_endpoint import FakeClock, ScriptedOpener, params  # noqa: E402  pylint: disable=wrong-import-position

GENERATE = '/v2/models/tensorrt_llm/generate'
READY = '/v2/models/tensorrt_llm/ready'
METRICS = (b'# HELP nv_inference_request_success Number of successful inference requests\n'
           b'# TYPE nv_inference_request_success counter\n'
           b'nv_inference_request_success{model="tensorrt_llm",version="1"} 3\n'
           b'nv_inference_request_failure{model="tensorrt_llm",reason="BACKEND",version="1"} 0\n'
           b'nv_inference_count{model="tensorrt_llm",version="1"} 3\n')


def answer(text='ML is a branch of AI.', strings=True, drop=(), **perf):
    figures = dict(acceptance_rate=0.75, total_accepted_draft_tokens=30, total_draft_tokens=40,
                   arrival_time_ns=1000000000, first_token_time_ns=1050000000, last_token_time_ns=1450000000,
                   kv_cache_hit_rate=0.0)
    figures.update(perf)
    doc = {'model_name': 'tensorrt_llm', 'model_version': '1', 'text_output': text}
    for key, value in figures.items():
        if key not in drop:
            doc[key] = str(value) if strings else value
    return json.dumps(doc).encode()


def routes(generate=None, ready=(200, b''), metrics=(200, METRICS)):
    return {'/v2/health/ready': [(200, b'')], READY: [ready], GENERATE: [generate or (200, answer())],
            '/metrics': [metrics]}


class Runner:
    """docker exec of the tokenizer script: counts words, like a tokenizer would count tokens."""

    def __init__(self, rc=0, out=None, err=''):
        self.rc, self.out, self.err, self.calls = rc, out, err, []

    def __call__(self, argv, data):
        self.calls.append(argv)
        texts = json.loads(data)
        out = self.out if self.out is not None else json.dumps([len(t.split()) for t in texts])
        return self.rc, out, self.err


def validate(opener, runner=None, **overrides):
    base = dict(api='triton', model='tensorrt_llm', url='http://127.0.0.1:8000', requests=2,
                metrics_url='http://127.0.0.1:8002', tokenizer={'container': 'triton-specdec', 'model': 'org/m'})
    base.update(overrides)
    clock = FakeClock()
    return ep.validate_endpoint(params(**base), opener=opener, clock=clock, sleep=clock.sleep,
                                runner=runner or Runner())


def failure(opener, runner=None, **overrides):
    with pytest.raises(ep.EndpointError) as info:
        validate(opener, runner, **overrides)
    return info.value.msg


@pytest.mark.parametrize('strings', [True, False], ids=['perf-as-strings', 'perf-as-numbers'])
def test_generate_with_perf_metrics_as_strings_or_numbers(strings):
    opener = ScriptedOpener(routes(generate=(200, answer(strings=strings))))
    runner = Runner()
    result = validate(opener, runner)
    sent = [c for c in opener.calls if c['path'] == GENERATE][0]['body']
    assert sent == {'text_input': 'Paris is great because', 'sampling_param_max_tokens': 64,
                    'sampling_param_temperature': 0.0, 'sampling_param_exclude_input_from_output': True,
                    'sampling_param_return_perf_metrics': True}
    assert result['served_models'] == ['tensorrt_llm']
    assert result['results'][0]['perf_metrics']['total_draft_tokens'] == 40
    assert result['speculative']['acceptance_rate'] == 0.75
    assert result['speculative']['perf_metrics']['total_accepted_draft_tokens'] == 60
    assert result['speculative']['acceptance_rate_source'] == 'triton_perf_metrics'
    # Six words per answer, counted by the stand-in tokenizer in the serving container.
    assert result['totals']['completion_tokens'] == 12
    assert runner.calls[0][:6] == ['docker', 'exec', '-i', '-e', 'HF_HUB_OFFLINE=1', 'triton-specdec']
    assert runner.calls[0][-1] == 'org/m'
    assert result['triton_metrics'] == {'url': 'http://127.0.0.1:8002/metrics', 'request_success': 3,
                                        'request_failure': 0, 'inference_count': 3}
    assert 'metrics port http://127.0.0.1:8002/metrics answers' in result['msg']


def test_missing_perf_fields_are_reported_not_invented():
    opener = ScriptedOpener(routes(generate=(200, answer(drop=('acceptance_rate', 'total_draft_tokens')))))
    result = validate(opener)
    assert result['speculative'] is None
    assert 'missing acceptance_rate, total_draft_tokens' in result['speculative_reason']
    assert result['results'][0]['perf_metrics']['acceptance_rate'] is None


def test_the_plain_model_reports_no_acceptance_rate():
    plain = answer(acceptance_rate=0.0, total_accepted_draft_tokens=0, total_draft_tokens=0)
    opener = ScriptedOpener(routes(generate=(200, plain)))
    result = validate(opener)
    assert result['speculative']['acceptance_rate'] is None
    assert 'no draft tokens were proposed' in result['speculative_reason']


def test_an_error_body_is_reported_with_tritons_message():
    body = json.dumps({'error': 'Error generating request: Streaming is only supported in decoupled mode.'}).encode()
    msg = failure(ScriptedOpener(routes(generate=(500, body))))
    assert msg == ('POST http://127.0.0.1:8000/v2/models/tensorrt_llm/generate (triton request 1 of 2) returned HTTP '
                   '500: Error generating request: Streaming is only supported in decoupled mode.')


def test_an_error_inside_a_200_body_and_a_malformed_metric():
    msg = failure(ScriptedOpener(routes(generate=(200, json.dumps({'error': 'boom'}).encode()))))
    assert 'returned a Triton error: boom' in msg
    msg = failure(ScriptedOpener(routes(generate=(200, answer(acceptance_rate='high')))))
    assert 'acceptance_rate is "high", not a number' in msg
    msg = failure(ScriptedOpener(routes(generate=(200, json.dumps({'model_name': 'tensorrt_llm'}).encode()))))
    assert '"text_output" is missing, not a string' in msg


def test_a_model_that_is_not_ready():
    msg = failure(ScriptedOpener(routes(ready=(400, json.dumps({'error': 'Model version not ready'}).encode()))))
    assert msg == ("Triton model 'tensorrt_llm' is not ready on http://127.0.0.1:8000: GET "
                   "/v2/models/tensorrt_llm/ready returned HTTP 400: Model version not ready")


def test_a_server_that_never_gets_ready_names_the_triton_health_path():
    opener = ScriptedOpener({'/v2/health/ready': [ep.TransportError('refused', 'connection refused')]})
    msg = failure(opener, timeout=3.0)
    assert 'GET /v2/health/ready did not return 200 within 3s' in msg and 'connection refused' in msg


def test_the_metrics_port_is_checked():
    msg = failure(ScriptedOpener(routes(metrics=ep.TransportError('refused', 'connection refused'))))
    assert msg == 'Triton metrics port http://127.0.0.1:8002/metrics does not answer: connection refused'
    msg = failure(ScriptedOpener(routes(metrics=(200, b'nv_gpu_utilization{gpu_uuid="x"} 0\n'))))
    assert 'has no nv_inference_request_success{model="tensorrt_llm"}' in msg


def test_a_tokenizer_that_fails_is_named():
    msg = failure(ScriptedOpener(routes()), Runner(rc=1, err="Traceback...\nOSError: org/m is not a local folder"))
    assert msg == ("counting tokens with org/m's tokenizer in container triton-specdec failed (rc 1): "
                   "Traceback... | OSError: org/m is not a local folder")
    msg = failure(ScriptedOpener(routes()), Runner(out='[1]'))
    assert 'gave expected 2 counts' in msg


def test_without_a_tokenizer_there_are_no_token_figures():
    result = validate(ScriptedOpener(routes()), tokenizer=None)
    assert result['totals']['completion_tokens'] is None and result['totals']['tokens_per_second'] is None


def test_triton_only_parameters_are_refused_elsewhere():
    with pytest.raises(ep.EndpointError) as info:
        ep.check_params(params(api='chat', metrics_url='http://127.0.0.1:8002'))
    assert 'metrics_url and tokenizer are for api=triton' in info.value.msg
    with pytest.raises(ep.EndpointError) as info:
        ep.check_params(params(api='triton', tokenizer={'container': 'c'}))
    assert 'tokenizer needs container and model' in info.value.msg


def test_bench_measures_triton_from_perf_metrics_and_the_tokenizer():
    clock = FakeClock()
    opener = ScriptedOpener(routes(generate=(200, answer(text='one two three four five six'))), clock=clock,
                            cost={GENERATE: [0.5]})
    client = ep.EndpointClient('http://127.0.0.1:8000', opener, clock=clock)
    out = bench.run_triton(client, 'tensorrt_llm', ['a', 'b'], 64, {'container': 'c', 'model': 'org/m'}, Runner(),
                           clock=clock)
    assert out['output_tokens'] == 12 and out['tokens_per_s'] == pytest.approx(12.0)
    assert out['ttft_ms']['p50'] == pytest.approx(50.0) and out['ttft_ms']['p95'] == pytest.approx(50.0)
    assert out['itl_ms']['p50'] == pytest.approx(80.0)  # (1.45 s - 1.05 s) over 5 gaps
    assert out['acceptance_rate'] == 0.75 and out['accepted_histogram'] is None
