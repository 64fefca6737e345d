#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
module: specdec_endpoint
short_description: Validate a TensorRT-LLM C(trtllm-serve) OpenAI-compatible endpoint or a Triton LLM API endpoint
version_added: 0.1.0
description:
  - Waits until C(GET /health) of a C(trtllm-serve) endpoint answers HTTP 200, checks that C(GET /v1/models) serves the
    expected model, sends O(requests) short generation requests and reports latency, completion tokens and tokens per second.
  - With O(prometheus_url) it reads the server's Prometheus metrics before and after the requests and reports the
    draft-token acceptance of those requests from the cumulative counters C(trtllm_spec_decode_num_draft_tokens_total),
    C(trtllm_spec_decode_num_accepted_tokens_total) and, per draft position, C(trtllm_spec_decode_drafted_tokens_total)
    and C(trtllm_spec_decode_accepted_tokens_total) (TensorRT-LLM's metrics collector, or the collection's exporter for
    releases without them). The drained iteration stats (C(GET /metrics)) are never read, since the exporter must be
    their only reader. A missing counter or an unreachable URL is not an error; RV(speculative_reason) says why
    nothing was reported.
  - With O(api=triton) it validates Triton Inference Server's TensorRT-LLM LLM API backend instead. It waits for
    C(GET /v2/health/ready) and checks C(GET /v2/models/<model>/ready). It then sends O(requests) C(POST
    /v2/models/<model>/generate) requests with C(text_input), C(sampling_param_max_tokens) and
    C(sampling_param_return_perf_metrics). From the responses it reports C(acceptance_rate),
    C(total_accepted_draft_tokens) and C(total_draft_tokens); they may arrive as numbers or as strings.
    It also checks Triton's metrics port (O(metrics_url)).
  - Triton's answer carries text only. With O(tokenizer), its tokens are counted with the model's tokenizer inside the
    serving container, which gives tokens per second.
  - The module only reads. It never reports a change and also runs in check mode.
  - Uses only the Python standard library and C(ansible.module_utils.urls); it does not need the C(requests) package.
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.INFO_MODULE
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - The module only reads. Generation requests do not change the server, so they are sent in check mode too.
  diff_mode:
    support: N/A
  idempotent:
    support: full
options:
  url:
    description:
      - Base URL of the server, for example V(http://127.0.0.1:8355). Must start with V(http://) or V(https://).
      - A trailing V(/) or V(/v1) is removed, so the OpenAI C(base_url) form also works.
    type: str
    required: true
  model:
    description:
      - Model id the server must list in C(GET /v1/models) and that is sent with every request.
      - C(trtllm-serve) reports the C(MODEL) argument exactly as it was given, for example a Hugging Face id or a local path.
    type: str
    required: true
  api:
    description:
      - Which OpenAI endpoint to exercise. V(completions) uses C(/v1/completions), V(chat) uses C(/v1/chat/completions)
        with a single user message, V(both) sends O(requests) requests to each.
      - V(triton) uses Triton's C(/v2/models/<model>/generate); O(model) is then the Triton model name,
        V(tensorrt_llm) in the LLM API model repository.
    type: str
    choices: [completions, chat, both, triton]
    default: chat
  prompt:
    description:
      - Prompt text (for V(chat), the content of the user message).
    type: str
    default: Paris is great because
  max_tokens:
    description:
      - C(max_tokens) sent with each request. Must be at least V(1).
    type: int
    default: 64
  temperature:
    description:
      - Sampling temperature sent with each request. Must be V(0) or more; V(0) is greedy decoding.
    type: float
    default: 0.0
  requests:
    description:
      - Number of sequential requests per API. Must be at least V(1).
    type: int
    default: 1
  timeout:
    description:
      - Seconds to wait for C(GET /health) to return HTTP 200. Refused connections and non-200 answers
        (C(trtllm-serve) answers 503 while it loads) are retried until then.
      - V(0) checks once.
    type: float
    default: 600
  poll_interval:
    description:
      - Seconds between two C(GET /health) attempts while waiting.
    type: float
    default: 2.0
  request_timeout:
    description:
      - Timeout in seconds of each single HTTP call, including generation requests.
    type: float
    default: 120
  min_tokens_per_second:
    description:
      - Fail when the mean of the per-request generation rates (RV(totals.tokens_per_second)) is below this value.
    type: float
  metrics_url:
    description:
      - With O(api=triton), the base URL of Triton's metrics port, for example V(http://127.0.0.1:8002).
        C(GET /metrics) must answer and report C(nv_inference_request_success) for O(model).
    type: str
  tokenizer:
    description:
      - With O(api=triton), count the generated tokens with the model's tokenizer by C(docker exec) in the serving
        container. The container must run on the host where the module runs. It needs C(python3) with
        C(transformers), and the model must be in its Hugging Face cache (the count runs with C(HF_HUB_OFFLINE=1)).
      - Without it, Triton results have no token counts and no tokens per second.
    type: dict
    suboptions:
      container:
        description: Name of the serving container.
        type: str
        required: true
      model:
        description: The model whose tokenizer counts, as the container knows it (a Hugging Face id or a path).
        type: str
        required: true
  speculative_stats:
    description:
      - Report speculative-decoding acceptance (from O(prometheus_url), or Triton's responses).
    type: bool
    default: true
  prometheus_url:
    description:
      - The URL of the server's Prometheus text, for example V(http://127.0.0.1:9464/metrics) (the collection's
        exporter) or V(http://127.0.0.1:8000/prometheus/metrics) (C(trtllm-serve) with C(return_perf_metrics)).
      - Not with O(api=triton). Without it no acceptance is reported for C(trtllm-serve).
    type: str
    version_added: 0.9.0
  discard_stale_stats:
    description:
      - Ignored since 0.9.0. The acceptance is the difference of cumulative counters read before and after the
        requests, so earlier traffic never counts.
    type: bool
    default: true
  headers:
    description:
      - Extra HTTP headers sent with every request.
    type: dict
    default: {}
  api_key:
    description:
      - "Sent as C(Authorization: Bearer <api_key>) when set. Overrides an C(Authorization) entry in O(headers)."
    type: str
  validate_certs:
    description:
      - Verify TLS certificates for V(https://) URLs.
    type: bool
    default: true
  use_proxy:
    description:
      - Use proxies from the environment (C(http_proxy), C(https_proxy), C(no_proxy)).
    type: bool
    default: true
notes:
  - C(/metrics) is filled only when the server runs with C(enable_iter_perf_stats=true), and C(/perf_metrics) only with
    C(return_perf_metrics=true) and C(perf_metrics_max_requests) above 0. Some builds do not report C(specDecodingStats)
    for one-model speculative decoding.
  - Requests are sent one after the other; the figures describe single-stream latency, not throughput under load.
seealso:
  - name: trtllm-serve
    description: TensorRT-LLM OpenAI-compatible server documentation.
    link: https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve/trtllm-serve.html
"""

EXAMPLES = r"""
---
- name: Wait for the EAGLE-3 server and send one chat completion
  dgx_spark.specdec.specdec_endpoint:
    url: http://127.0.0.1:8355
    model: openai/gpt-oss-120b
  register: endpoint

- name: Show speed and draft acceptance
  ansible.builtin.debug:
    msg: >-
      {{ endpoint.totals.tokens_per_second }} tokens/s,
      acceptance {{ (endpoint.speculative or {}).acceptance_rate | default('n/a', true) }}
      ({{ endpoint.speculative_reason }})

- name: Exercise both APIs five times and require 20 tokens/s
  dgx_spark.specdec.specdec_endpoint:
    url: "http://{{ ansible_host }}:8355"
    model: nvidia/Llama-3.3-70B-Instruct-FP4
    api: both
    requests: 5
    max_tokens: 128
    timeout: 1200
    min_tokens_per_second: 20

- name: Validate Triton's LLM API backend, count tokens with the model's tokenizer and check the metrics port
  dgx_spark.specdec.specdec_endpoint:
    url: http://127.0.0.1:8000
    model: tensorrt_llm
    api: triton
    metrics_url: http://127.0.0.1:8002
    tokenizer:
      container: triton-specdec
      model: meta-llama/Llama-3.1-8B-Instruct

- name: Check an endpoint behind a TLS proxy that needs a token
  dgx_spark.specdec.specdec_endpoint:
    url: https://llm.example.com
    model: Qwen/Qwen3-8B
    api_key: "{{ llm_api_key }}"
    headers:
      X-Request-Source: ansible
    timeout: 0
"""

RETURN = r"""
msg:
  description: One-line summary.
  returned: success
  type: str
  sample: "2 requests to http://127.0.0.1:8355 OK: mean 41.27 tokens/s, mean latency 1.551s, draft acceptance rate 0.625"
url:
  description: Normalized base URL that was used.
  returned: always
  type: str
  sample: http://127.0.0.1:8355
model:
  description: Expected model id.
  returned: always
  type: str
  sample: openai/gpt-oss-120b
health:
  description: Outcome of the readiness wait.
  returned: when the parameters were valid
  type: dict
  contains:
    status:
      description: HTTP status of the last C(GET /health), V(null) when it never answered 200.
      type: int
      returned: always
      sample: 200
    attempts:
      description: Number of C(GET /health) attempts.
      type: int
      returned: always
      sample: 3
    waited_s:
      description: Seconds spent waiting.
      type: float
      returned: always
      sample: 4.012
    last_seen:
      description: "What the last attempt saw, for example V(connection refused) or V(HTTP 503: LLM is unavailable)."
      type: str
      returned: when the endpoint did not become ready
      sample: "HTTP 503: LLM is unavailable"
  sample: {"status": 200, "attempts": 3, "waited_s": 4.012}
served_models:
  description: Model ids listed by C(GET /v1/models).
  returned: when the endpoint became ready and listed models
  type: list
  elements: str
  sample: ["openai/gpt-oss-120b"]
results:
  description: One entry per generation request, in the order sent.
  returned: when the model check passed
  type: list
  elements: dict
  contains:
    api:
      description: V(completions) or V(chat).
      type: str
      returned: always
      sample: chat
    index:
      description: Zero-based request number within its API.
      type: int
      returned: always
      sample: 0
    status:
      description: HTTP status.
      type: int
      returned: always
      sample: 200
    latency_s:
      description: Wall-clock seconds from sending the request to reading the whole response.
      type: float
      returned: always
      sample: 1.5512
    completion_tokens:
      description:
        - C(usage.completion_tokens) of the response.
        - With O(api=triton), the tokenizer's count, or V(null) without O(tokenizer).
      type: int
      returned: always
      sample: 64
    prompt_tokens:
      description: C(usage.prompt_tokens), V(null) when absent.
      type: int
      returned: always
      sample: 12
    tokens_per_second:
      description: RV(results[].completion_tokens) divided by RV(results[].latency_s).
      type: float
      returned: always
      sample: 41.259
    finish_reason:
      description: C(finish_reason) of the first choice.
      type: str
      returned: always
      sample: length
    text:
      description: Start of the generated text (at most 200 characters, whitespace collapsed).
      type: str
      returned: always
      sample: "it has the Eiffel Tower, great food and museums..."
    perf_metrics:
      description:
        - With O(api=triton), the response's C(acceptance_rate), C(total_accepted_draft_tokens), C(total_draft_tokens),
          C(arrival_time_ns), C(first_token_time_ns) and C(last_token_time_ns) as numbers.
        - A key is V(null) when the response lacked it.
      type: dict
      returned: with O(api=triton)
      sample: {"acceptance_rate": 0.72, "total_accepted_draft_tokens": 93, "total_draft_tokens": 129}
  sample: [{"api": "chat", "index": 0, "status": 200, "latency_s": 1.5512, "completion_tokens": 64, "prompt_tokens": 12,
            "tokens_per_second": 41.259, "finish_reason": "length", "text": "it has the Eiffel Tower..."}]
totals:
  description: Aggregate over all requests.
  returned: success
  type: dict
  contains:
    requests:
      description: Number of requests.
      type: int
      returned: always
      sample: 2
    completion_tokens:
      description: Sum of completion tokens.
      type: int
      returned: always
      sample: 128
    prompt_tokens:
      description: Sum of prompt tokens, V(null) if a response did not report them.
      type: int
      returned: always
      sample: 24
    latency_s:
      description: Sum of request latencies in seconds.
      type: float
      returned: always
      sample: 3.102
    mean_latency_s:
      description: Mean request latency in seconds.
      type: float
      returned: always
      sample: 1.551
    min_latency_s:
      description: Shortest request latency in seconds.
      type: float
      returned: always
      sample: 1.5
    max_latency_s:
      description: Longest request latency in seconds.
      type: float
      returned: always
      sample: 1.602
    tokens_per_second:
      description: Mean of the per-request tokens per second; compared with O(min_tokens_per_second).
      type: float
      returned: always
      sample: 41.27
    aggregate_tokens_per_second:
      description: RV(totals.completion_tokens) divided by RV(totals.latency_s).
      type: float
      returned: always
      sample: 41.26
    by_api:
      description: The same figures per API, keyed by V(completions) and V(chat).
      type: dict
      returned: when O(api=both)
      sample: {"chat": {"requests": 1, "completion_tokens": 64}, "completions": {"requests": 1, "completion_tokens": 64}}
  sample: {"requests": 2, "completion_tokens": 128, "prompt_tokens": 24, "latency_s": 3.102, "mean_latency_s": 1.551,
           "min_latency_s": 1.5, "max_latency_s": 1.602, "tokens_per_second": 41.27, "aggregate_tokens_per_second": 41.26}
speculative:
  description:
    - Speculative-decoding acceptance figures of the validation's requests, V(null) when the server reports none.
  returned: success
  type: dict
  contains:
    acceptance_rate:
      description: Accepted draft tokens divided by draft tokens.
      type: float
      returned: always
      sample: 0.625
    acceptance_rate_source:
      description: V(prometheus) (the counters at O(prometheus_url)) or V(triton_perf_metrics), V(null) when no rate could be computed.
      type: str
      returned: always
      sample: prometheus
    mean_acceptance_length:
      description:
        - Tokens per drafting step - 1 + accepted draft tokens / steps, the steps being the first draft position's
          drafted tokens. V(null) without per-position counters and with O(api=triton).
      type: float
      returned: always
      sample: 2.8
    drafted_tokens:
      description: Draft tokens proposed during the requests (C(trtllm-serve)).
      type: float
      returned: with O(prometheus_url)
      sample: 300
    accepted_tokens:
      description: Draft tokens accepted during the requests (C(trtllm-serve)).
      type: float
      returned: with O(prometheus_url)
      sample: 180
    per_position:
      description: Acceptance per draft position (C(token_position) from 0) - position, drafted, accepted, rate.
      type: list
      elements: dict
      returned: with O(prometheus_url)
      sample: [{"position": 0, "drafted": 100, "accepted": 90, "rate": 0.9}]
    metrics_url:
      description: The Prometheus URL read (C(trtllm-serve)).
      type: str
      returned: with O(prometheus_url)
      sample: http://127.0.0.1:9464/metrics
    metrics:
      description: Always V(null) with O(api=triton) (kept for its callers).
      type: dict
      returned: with O(api=triton)
    perf_metrics:
      description:
        - Aggregate of the C(perf_metrics.speculative_decoding) blocks of C(GET /perf_metrics), V(null) when there were none.
        - Keys C(requests), C(requests_with_speculative_decoding), C(total_draft_tokens), C(total_accepted_draft_tokens),
          C(acceptance_rate), C(mean_request_acceptance_rate).
      type: dict
      returned: with O(api=triton)
      sample: {"requests": 2, "requests_with_speculative_decoding": 2, "total_draft_tokens": 80,
               "total_accepted_draft_tokens": 50, "acceptance_rate": 0.625, "mean_request_acceptance_rate": 0.63}
  sample: {"acceptance_rate": 0.625, "acceptance_rate_source": "metrics", "mean_acceptance_length": 3.5,
           "metrics": {"num_draft_tokens": 80, "num_accepted_tokens": 50}, "perf_metrics": null}
triton_metrics:
  description: What Triton's metrics port reported for the model (O(api=triton) with O(metrics_url)).
  returned: when O(metrics_url) was checked
  type: dict
  sample: {"url": "http://127.0.0.1:8002/metrics", "request_success": 3, "request_failure": 0, "inference_count": 3}
speculative_reason:
  description: What C(/metrics) and C(/perf_metrics) returned, explaining an absent or partial RV(speculative).
  returned: success
  type: str
  sample: "/metrics: 20 of 20 iteration stats carry specDecodingStats; /perf_metrics: not available on this build (HTTP 404)"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgx_spark.specdec.plugins.module_utils._endpoint import (
    API_CHOICES,
    EndpointError,
    validate_endpoint,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str', required=True),
            model=dict(type='str', required=True),
            api=dict(type='str', choices=list(API_CHOICES), default='chat'),
            prompt=dict(type='str', default='Paris is great because'),
            max_tokens=dict(type='int', default=64, no_log=False),
            temperature=dict(type='float', default=0.0),
            requests=dict(type='int', default=1),
            timeout=dict(type='float', default=600),
            poll_interval=dict(type='float', default=2.0),
            request_timeout=dict(type='float', default=120),
            min_tokens_per_second=dict(type='float', no_log=False),
            speculative_stats=dict(type='bool', default=True),
            discard_stale_stats=dict(type='bool', default=True),
            prometheus_url=dict(type='str'),
            headers=dict(type='dict', default={}),
            api_key=dict(type='str', no_log=True),
            validate_certs=dict(type='bool', default=True),
            use_proxy=dict(type='bool', default=True),
            metrics_url=dict(type='str'),
            tokenizer=dict(type='dict', no_log=False, options=dict(
                container=dict(type='str', required=True), model=dict(type='str', required=True))),
        ),
        supports_check_mode=True,
    )

    def runner(argv, data):
        return module.run_command(argv, data=data)

    try:
        result = validate_endpoint(module.params, runner=runner)
    except EndpointError as exc:
        module.fail_json(msg=exc.msg, changed=False, **exc.details)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
