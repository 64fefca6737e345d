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
  - Sends each prompt of O(prompts) as a streamed OpenAI request (C(stream=true), C(include_usage)), at concurrency
    O(concurrency) (1 by default, one request after the other), and reports output tokens per second, time to first
    token and inter-token latency (the gaps between streamed chunks), p50 and p95.
  - With O(iteration_stats) it reads the server's iteration statistics (C(GET /metrics); the server needs
    C(enable_iter_perf_stats=true) in its options) after each request. At concurrency 1 every iteration is one request's
    step, so the number of draft tokens each iteration accepted gives the accepted-length histogram (acceptance by draft
    position), and C(iterLatencyMS) the mean step time. Without speculative decoding those figures are null.
  - With O(api=triton) it measures Triton's LLM API backend (C(POST /v2/models/<model>/generate), one request after
    the other). Time to first token and the mean gap between tokens come from each response's perf metrics
    (server-side timestamps). Tokens are counted with the model's tokenizer in the serving container (O(tokenizer)).
    Acceptance comes from the per-request draft counts. There is no accepted-length histogram and no step time.
  - The module only reads. It never reports a change. In check mode it sends nothing (the server may not exist yet).
  - Used by C(playbooks/tune_draft_len.yml) (see M(dgx_spark.specdec.specdec_tune)).
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.INFO_MODULE
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: partial
    details:
      - In check mode no request is sent and RV(skipped) is true.
  diff_mode:
    support: N/A
  idempotent:
    support: full
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
      - The prompt set. C(playbooks/vars/bench_prompts.yml) ships one written for this collection (varied lengths and
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
      - Requests in flight at once. Above 1 the accepted-length histogram is not reported (iterations mix requests).
    type: int
    default: 1
  timeout:
    description:
      - Seconds one request may take.
    type: float
    default: 600
  iteration_stats:
    description:
      - Read C(GET /metrics) for the acceptance figures and the step time.
    type: bool
    default: true
  api_key:
    description:
      - Bearer token, if the server wants one.
    type: str
  validate_certs:
    description:
      - Validate TLS certificates for V(https://) URLs.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Measure the served endpoint with the collection's prompt set
  dgx_spark.specdec.specdec_bench:
    url: http://127.0.0.1:8000
    model: openai/gpt-oss-120b
    prompts: "{{ specdec_bench_prompts }}"
    max_tokens: 256
  register: bench

- name: Show tokens/s and the acceptance
  ansible.builtin.debug:
    msg: "{{ bench.tokens_per_s | round(1) }} tok/s, acceptance {{ bench.acceptance_rate }}"
"""

RETURN = r"""
skipped:
  description: True in check mode (nothing was sent).
  returned: check mode
  type: bool
requests:
  description: Requests completed.
  returned: success
  type: int
output_tokens:
  description: Output tokens of all requests (from the streams' C(usage)).
  returned: success
  type: int
tokens_per_s:
  description: Output tokens per second over the whole run.
  returned: success
  type: float
ttft_ms:
  description: Time to first token, p50 and p95, in ms.
  returned: success
  type: dict
itl_ms:
  description: Inter-token latency (gaps between streamed chunks), p50 and p95, in ms; null with one chunk per request.
  returned: success
  type: dict
step_ms_mean:
  description: Mean iteration time from C(/metrics) (C(iterLatencyMS)), in ms; null without iteration statistics.
  returned: success
  type: float
accepted_histogram:
  description:
    - Iterations that accepted 0, 1, ... draft tokens (index = accepted count); null without speculative decoding,
      iteration statistics, or at a concurrency above 1.
  returned: success
  type: list
  elements: int
acceptance_rate:
  description: Accepted draft tokens / draft tokens.
  returned: success
  type: float
mean_acceptance_length:
  description: Tokens produced per iteration (1 + accepted draft tokens), averaged.
  returned: success
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgx_spark.specdec.plugins.module_utils._bench import make_stream_opener, run, run_triton
from ansible_collections.dgx_spark.specdec.plugins.module_utils._endpoint import (
    EndpointClient,
    EndpointError,
    TransportError,
    build_headers,
    make_urls_opener,
    normalize_url,
)


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
            timeout=dict(type="float", default=600),
            iteration_stats=dict(type="bool", default=True),
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
    if not p["prompts"]:
        module.fail_json(msg="prompts: the prompt set is empty")
    if p["api"] == "triton" and p["concurrency"] != 1:
        module.fail_json(msg="concurrency: %s; accepted with api=triton: 1 (the Triton tutorial's comparison)" % p["concurrency"])
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: no request sent")
    try:
        base = normalize_url(p["url"])
        headers = build_headers(None, p["api_key"])
        if p["api"] == "triton":
            client = EndpointClient(base, make_urls_opener(p["validate_certs"]), headers, request_timeout=p["timeout"])
            result = run_triton(client, p["model"], p["prompts"], p["max_tokens"], p["tokenizer"],
                                lambda argv, data: module.run_command(argv, data=data), p["temperature"])
            module.exit_json(changed=False, **result)
        stats = None
        if p["iteration_stats"]:
            stats = EndpointClient(base, make_urls_opener(p["validate_certs"]), headers, request_timeout=30)
        result = run(base, p["api"], p["model"], p["prompts"], p["max_tokens"], p["temperature"], p["concurrency"],
                     p["timeout"], headers, make_stream_opener(p["validate_certs"]), stats)
    except EndpointError as exc:
        module.fail_json(msg=exc.msg, changed=False)
    except TransportError as exc:
        module.fail_json(msg="%s: %s" % (p["url"], exc.message), changed=False)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
