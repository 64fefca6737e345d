#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
module: specdec_bench
short_description: Measure a C(trtllm-serve) or Triton endpoint with a prompt set, for choosing speculative-decoding settings
version_added: 0.4.0
description:
  - Sends O(warmup) requests that are not counted, then each prompt of O(prompts) as a streamed OpenAI request
    (C(stream=true), C(include_usage)) at concurrency O(concurrency), and reports output tokens per second, requests
    per second, and the mean, p50, p90, p95 and p99 of the time to first token, the inter-token latency (the gaps
    between streamed chunks), the time per output token and the request latency.
  - The time to first token counts the first chunk that carries text or reasoning (C(delta.reasoning_content) or
    C(delta.reasoning), as servers that stream reasoning apart send it). Output tokens come from the stream's
    C(usage) when the server reports it, otherwise from the number of chunks that carried text (RV(output_tokens_source)).
  - A failed request is counted (RV(failed_requests), RV(errors)) and the run goes on. The module fails only when
    every request failed.
  - With O(metrics_url) it reads the cluster's Prometheus metrics before the measured requests and after them, and
    computes acceptance from the difference of TensorRT-LLM's speculative-decoding counters
    (C(trtllm_spec_decode_num_draft_tokens_total), C(trtllm_spec_decode_num_accepted_tokens_total) and their per draft
    position C(token_position) series), giving the acceptance rate, the mean acceptance length, acceptance by draft position
    and the accepted-length histogram. Point it at the server's C(/prometheus/metrics) (releases whose collector has
    those counters) or at the collection's exporter (C(http://HOST:9464/metrics)). Nothing else may read the server's
    C(/metrics) iteration log while the exporter runs; this module no longer does.
  - With O(export_dir) it writes the run in the shape of NVIDIA AIPerf's exports, C(profile_export_aiperf.json)
    (aggregate statistics, AIPerf's metric tags and units) and C(profile_export.jsonl) (one record per request), so that
    tools that read AIPerf's files read these (C(tools/aiperf_check.py) checks them). The acceptance figures go in a
    block of their own, C(dgx_spark_specdec). See C(docs/benchmarks.md) for comparing with AIPerf and C(trtllm-bench).
  - With O(api=triton) it measures Triton's LLM API backend (C(POST /v2/models/<model>/generate), one request after
    the other). Time to first token and the mean gap between tokens come from each response's perf metrics
    (server-side timestamps). Tokens are counted with the model's tokenizer in the serving container (O(tokenizer)).
    Acceptance comes from the per-request draft counts. There is no accepted-length histogram.
  - The module only reads from the server. Writing the export files is its only change (on the host where it runs).
    In check mode it sends nothing and writes nothing (the server may not exist yet).
  - Used by C(playbooks/tune_draft_len.yml) (see M(dgx_spark.specdec.specdec_tune)).
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - In check mode no request is sent, no file is written, and RV(skipped) is true. C(changed) tells whether
        export files would be written.
  diff_mode:
    support: none
  idempotent:
    support: none
    details:
      - With O(export_dir) every run writes new measurements (C(changed) is true); without it nothing changes.
options:
  url:
    description:
      - Base URL of the server, for example V(http://127.0.0.1:8000).
    type: str
    required: true
  model:
    description:
      - The served model name (as C(GET /v1/models) lists it).
    type: str
    required: true
  api:
    description:
      - V(completions) (C(/v1/completions)) or V(chat) (C(/v1/chat/completions)), or V(triton) (Triton's generate
        endpoint; O(model) is then the Triton model name, V(tensorrt_llm)).
    type: str
    choices: [completions, chat, triton]
    default: completions
  tokenizer:
    description:
      - Required with O(api=triton). The serving container and the model whose tokenizer counts the generated tokens
        (C(docker exec) on the host where the module runs; see M(dgx_spark.specdec.specdec_endpoint)).
    type: dict
    suboptions:
      container:
        description: Name of the serving container.
        type: str
        required: true
      model:
        description: The model whose tokenizer counts (a Hugging Face id or a path inside the container).
        type: str
        required: true
  prompts:
    description:
      - The prompt set. C(playbooks/bench/prompts.yml) ships one written for this collection (varied lengths and
        tasks); replace it with your own.
    type: list
    elements: str
    required: true
  max_tokens:
    description:
      - Output tokens asked for per request.
    type: int
    default: 256
  temperature:
    description:
      - Sampling temperature (0 is greedy, what speculative decoding is usually measured with).
    type: float
    default: 0.0
  concurrency:
    description:
      - Requests in flight at once.
    type: int
    default: 1
  warmup:
    description:
      - Requests sent before the measured ones (the prompts in turn) and not counted. The "before" reading of
        O(metrics_url) is taken after them.
    type: int
    default: 2
  timeout:
    description:
      - Seconds one request may take.
    type: float
    default: 600
  metrics_url:
    description:
      - Full URL of the cluster's Prometheus metrics, for the acceptance figures, for example
        V(http://127.0.0.1:8000/prometheus/metrics) or the collection's exporter V(http://127.0.0.1:9464/metrics).
      - Omitted, the acceptance figures are null.
      - Not with O(api=triton) (its acceptance comes from the responses).
      - The alias O(prometheus_url) is the name M(dgx_spark.specdec.specdec_endpoint) and the plan
        (C(specdec_plan.serve.endpoint.prometheus_url)) use for the same URL.
    type: str
    aliases: [prometheus_url]
  export_dir:
    description:
      - Directory on the host where the module runs for C(profile_export_aiperf.json) and C(profile_export.jsonl)
        (AIPerf's file names and shapes). Created if missing; the files are replaced atomically, mode C(0644).
      - Omitted, no file is written.
    type: path
  api_key:
    description:
      - Bearer token, if the server wants one.
    type: str
  validate_certs:
    description:
      - Validate TLS certificates for V(https://) URLs.
    type: bool
    default: true
notes:
  - AIPerf's C(inter_token_latency) is the time per output token, RV(tpot_ms) here; the gaps between chunks, RV(itl_ms)
    here, are AIPerf's C(inter_chunk_latency). With speculative decoding a chunk carries several tokens, so the two differ.
seealso:
  - name: NVIDIA AIPerf
    description: The benchmark tool whose export shape O(export_dir) follows.
    link: https://github.com/ai-dynamo/aiperf
"""

EXAMPLES = r"""
- name: Measure the served endpoint with the collection's prompt set
  dgx_spark.specdec.specdec_bench:
    url: http://127.0.0.1:8000
    model: openai/gpt-oss-120b
    prompts: "{{ specdec_bench_prompts }}"
    max_tokens: 256
    metrics_url: http://127.0.0.1:9464/metrics
  register: bench

- name: Show tokens/s and the acceptance
  ansible.builtin.debug:
    msg: "{{ bench.tokens_per_s | round(1) }} tok/s, acceptance {{ bench.acceptance_rate }}, TPOT p50 {{ bench.tpot_ms.p50 }} ms"

- name: Measure at concurrency 8 and keep AIPerf-shaped files for comparison
  dgx_spark.specdec.specdec_bench:
    url: http://127.0.0.1:8000
    model: openai/gpt-oss-120b
    api: chat
    prompts: "{{ specdec_bench_prompts }}"
    concurrency: 8
    warmup: 8
    metrics_url: http://127.0.0.1:8000/prometheus/metrics
    export_dir: "{{ playbook_dir }}/results/bench-c8"
  delegate_to: localhost
"""

RETURN = r"""
skipped:
  description: True in check mode (nothing was sent).
  returned: check mode
  type: bool
requests:
  description: Measured requests that succeeded.
  returned: success
  type: int
failed_requests:
  description: Measured requests that failed (counted, not retried).
  returned: success
  type: int
errors:
  description: The messages of the first failed requests (at most 5).
  returned: success
  type: list
  elements: str
warmup_requests:
  description: Requests sent before the measurement and not counted.
  returned: success
  type: int
concurrency:
  description: Requests in flight at once.
  returned: success
  type: int
output_tokens:
  description: Output tokens of the successful requests.
  returned: success
  type: int
output_tokens_source:
  description: V(usage) (the streams' C(usage)), V(chunks) (chunks that carried text) or V(mixed).
  returned: success
  type: str
input_tokens:
  description: Prompt tokens of the successful requests (from C(usage)); null when the server did not report them.
  returned: success
  type: int
duration_s:
  description: From the first measured request's start to the last one's end, in seconds.
  returned: success
  type: float
tokens_per_s:
  description: Output tokens per second over the measured run (AIPerf's C(output_token_throughput)).
  returned: success
  type: float
requests_per_s:
  description: Successful requests per second over the measured run (AIPerf's C(request_throughput)).
  returned: success
  type: float
ttft_ms:
  description: Time to first token in ms, C(mean), C(min), C(max), C(p50), C(p90), C(p95), C(p99).
  returned: success
  type: dict
itl_ms:
  description: Inter-token latency, the gaps between streamed chunks, in ms (same keys); null with one chunk per request.
  returned: success
  type: dict
tpot_ms:
  description: Time per output token of each request, (latency - TTFT) / (output tokens - 1), in ms (same keys).
  returned: success
  type: dict
latency_ms:
  description: Request latency in ms (same keys).
  returned: success
  type: dict
step_ms_mean:
  description: Always null; kept for readers of earlier results (the iteration log is the exporter's to read).
  returned: success
  type: float
iterations:
  description: Always null; kept for readers of earlier results.
  returned: success
  type: int
metrics_url:
  description: The Prometheus URL read for acceptance, or null.
  returned: success
  type: str
acceptance_rate:
  description: Accepted draft tokens / drafted tokens during the measured requests; null without O(metrics_url) or drafts.
  returned: success
  type: float
mean_acceptance_length:
  description: Tokens produced per drafting step (1 + accepted draft tokens / steps); null without per-position counters.
  returned: success
  type: float
accepted_histogram:
  description: Drafting steps that accepted 0, 1, ... draft tokens (index = accepted count); null without per-position counters.
  returned: success
  type: list
  elements: int
acceptance_per_position:
  description:
    - Acceptance by draft position, each C({position, drafted, accepted, rate}); null without per-position counters.
    - C(position) is the collector's C(token_position) label (C(0) is the first draft token).
  returned: success
  type: list
  elements: dict
drafted_tokens:
  description: Draft tokens proposed during the measured requests.
  returned: success
  type: float
accepted_tokens:
  description: Draft tokens accepted during the measured requests.
  returned: success
  type: float
export_files:
  description: The files written under O(export_dir) (empty without it, and in check mode).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgx_spark.specdec.plugins.module_utils._bench import (
    export_files,
    make_stream_opener,
    make_text_getter,
    run,
    run_triton,
)
from ansible_collections.dgx_spark.specdec.plugins.module_utils._endpoint import (
    EndpointClient,
    EndpointError,
    TransportError,
    build_headers,
    make_urls_opener,
    normalize_url,
)


def _runner(module):
    def run_command(argv, data):
        return module.run_command(argv, data=data)
    return run_command


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            model=dict(type="str", required=True),
            api=dict(type="str", choices=["completions", "chat", "triton"], default="completions"),
            tokenizer=dict(type="dict", no_log=False, options=dict(
                container=dict(type="str", required=True), model=dict(type="str", required=True))),
            prompts=dict(type="list", elements="str", required=True),
            max_tokens=dict(type="int", default=256, no_log=False),
            temperature=dict(type="float", default=0.0),
            concurrency=dict(type="int", default=1),
            warmup=dict(type="int", default=2),
            timeout=dict(type="float", default=600),
            metrics_url=dict(type="str", aliases=["prometheus_url"]),
            export_dir=dict(type="path"),
            api_key=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
        ),
        required_if=[("api", "triton", ("tokenizer",))],
        supports_check_mode=True,
    )
    p = module.params
    for name in ("max_tokens", "concurrency"):
        if p[name] < 1:
            module.fail_json(msg="%s: %s must be >= 1" % (name, p[name]))
    if p["warmup"] < 0:
        module.fail_json(msg="warmup: %s must be >= 0" % p["warmup"])
    if not p["prompts"]:
        module.fail_json(msg="prompts: the prompt set is empty")
    if p["api"] == "triton" and p["concurrency"] != 1:
        module.fail_json(msg="concurrency: %s; accepted with api=triton: 1 (the Triton tutorial's comparison)" % p["concurrency"])
    if p["api"] == "triton" and p["metrics_url"]:
        module.fail_json(msg="metrics_url: with api=triton acceptance comes from the responses' perf metrics")
    if module.check_mode:
        module.exit_json(changed=bool(p["export_dir"]), skipped=True, export_files=[], msg="check mode: no request sent")
    try:
        base = normalize_url(p["url"])
        headers = build_headers(None, p["api_key"])
        if p["api"] == "triton":
            client = EndpointClient(base, make_urls_opener(p["validate_certs"]), headers, request_timeout=p["timeout"])
            result = run_triton(client, p["model"], p["prompts"], p["max_tokens"], p["tokenizer"], _runner(module),
                                p["temperature"], warmup=p["warmup"])
        else:
            result = run(base, p["api"], p["model"], p["prompts"], p["max_tokens"], p["temperature"], p["concurrency"],
                         p["timeout"], headers, make_stream_opener(p["validate_certs"]), metrics_url=p["metrics_url"],
                         metrics_get=make_text_getter(p["validate_certs"]), warmup=p["warmup"])
        records, run_info = result.pop("_records"), result.pop("_run")
        files = export_files(p["export_dir"], result, records, run_info) if p["export_dir"] else []
    except EndpointError as exc:
        module.fail_json(msg=exc.msg, changed=False)
    except TransportError as exc:
        module.fail_json(msg="%s: %s" % (p["url"], exc.message), changed=False)
    module.exit_json(changed=bool(files), export_files=files, **result)


if __name__ == "__main__":
    main()
