"""trtllm-serve stand-in: HTTP endpoints, OpenAI shapes, metrics, perf metrics, performance model."""

import json
import time
import urllib.request

import pytest

from lab_helpers import DRAFT, MODEL, hf_download, http, running_server, write_yaml

SPEC_OPTIONS = """\
enable_iter_perf_stats: true
return_perf_metrics: true
perf_metrics_max_requests: 50
cuda_graph_config:
  max_batch_size: 4
speculative_config:
  decoding_type: Eagle
  max_draft_len: 3
  speculative_model_dir: {draft}
kv_cache_config:
  free_gpu_memory_fraction: 0.85
"""


@pytest.fixture
def spec_server(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    draft = hf_download(standin_env, DRAFT, "--local-dir", str(tmp_path / "draft"))
    path = write_yaml(tmp_path / "extra.yml", SPEC_OPTIONS.format(draft=draft))
    standin_env["STANDIN_TIME_SCALE"] = "1"   # really sleep the simulated latency
    with running_server(standin_env, [MODEL, "--extra_llm_api_options", path], tmp_path) as server:
        yield server


@pytest.fixture
def plain_server(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    with running_server(standin_env, [MODEL], tmp_path) as server:
        yield server


def completion(server, prompt="Paris is great because", max_tokens=16, model=MODEL, **extra):
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens}
    body.update(extra)
    return http("POST", server.url + "/v1/completions", body)


def chat(server, content="Paris is great because", max_tokens=64, model=MODEL, **extra):
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens}
    body.update(extra)
    return http("POST", server.url + "/v1/chat/completions", body)


def test_health_503_until_loaded(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    standin_env["STANDIN_STARTUP_SECONDS"] = "1.5"
    with running_server(standin_env, [MODEL], tmp_path, wait=False) as server:
        deadline = time.time() + 10
        status = None
        while time.time() < deadline:
            try:
                status, body = http("GET", server.url + "/health")
                break
            except OSError:
                time.sleep(0.05)
        assert status == 503 and "unavailable" in body
        assert completion(server)[0] == 503
        assert "Application startup complete." not in server.log()
        server.wait_ready()
        assert http("GET", server.url + "/health")[0] == 200
        assert http("GET", server.url + "/health_generate") == (200, "Generation health check OK")


def test_models_version_and_unknown_paths(plain_server):
    status, body = http("GET", plain_server.url + "/v1/models")
    assert status == 200 and body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [MODEL]
    assert http("GET", plain_server.url + "/version") == (200, {"version": "1.2.0rc6"})
    assert http("GET", plain_server.url + "/v1/nope")[0] == 404
    assert http("GET", plain_server.url + "/v1/completions")[0] == 405


def test_completion_shape_and_determinism(plain_server):
    status, body = completion(plain_server, max_tokens=20)
    assert status == 200
    assert body["object"] == "text_completion" and body["model"] == MODEL
    assert body["id"].startswith("cmpl-") and isinstance(body["created"], int)
    choice = body["choices"][0]
    assert choice["text"].strip() and choice["finish_reason"] in ("length", "stop")
    usage = body["usage"]
    assert usage["completion_tokens"] <= 20 and usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert len(choice["text"].split()) == usage["completion_tokens"]
    again = completion(plain_server, max_tokens=20)[1]
    assert again["choices"][0]["text"] == choice["text"]
    other = completion(plain_server, prompt="Something else entirely", max_tokens=20)[1]
    assert other["choices"][0]["text"] != choice["text"]


@pytest.mark.parametrize("max_tokens", [1, 5, 64])
def test_max_tokens_honoured(plain_server, max_tokens):
    body = completion(plain_server, max_tokens=max_tokens)[1]
    assert 1 <= body["usage"]["completion_tokens"] <= max_tokens
    if body["choices"][0]["finish_reason"] == "length":
        assert body["usage"]["completion_tokens"] == max_tokens


def test_chat_shape(plain_server):
    status, body = chat(plain_server)
    assert status == 200
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    message = body["choices"][0]["message"]
    assert message["role"] == "assistant" and message["content"].strip()
    assert body["choices"][0]["finish_reason"] in ("length", "stop")
    assert body["usage"]["completion_tokens"] == len(message["content"].split())


@pytest.mark.parametrize("body, param", [
    ({"model": "wrong/model", "prompt": "hi"}, "model"),
    ({"prompt": "hi"}, "model"),
    ({"model": MODEL}, "prompt"),
    ({"model": MODEL, "prompt": "hi", "max_tokens": 0}, "max_tokens"),
    ({"model": MODEL, "prompt": "hi", "max_tokens": "8"}, "max_tokens"),
    ({"model": MODEL, "prompt": "hi", "max_tokens": 10 ** 7}, "max_tokens"),
    ({"model": MODEL, "prompt": "hi", "temperature": 9}, "temperature"),
])
def test_bad_completion_requests_get_openai_errors(plain_server, body, param):
    status, err = http("POST", plain_server.url + "/v1/completions", body)
    assert status == 400
    assert err["object"] == "error" and err["code"] == 400 and err["message"]
    assert err["param"] == param


def test_bad_chat_requests(plain_server):
    assert chat(plain_server, model="other")[0] == 400
    status, err = http("POST", plain_server.url + "/v1/chat/completions", {"model": MODEL, "messages": []})
    assert status == 400 and err["param"] == "messages"
    status, err = http("POST", plain_server.url + "/v1/chat/completions", b"{not json")
    assert status == 400 and "JSON" in err["message"]


def test_streaming_completion(plain_server):
    req = urllib.request.Request(plain_server.url + "/v1/chat/completions", method="POST",
                                 data=json.dumps({"model": MODEL, "max_tokens": 12, "stream": True,
                                                  "stream_options": {"include_usage": True},
                                                  "messages": [{"role": "user", "content": "hi"}]}).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in resp.read().decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    usage = chunks[-1]["usage"]
    assert len(text.split()) == usage["completion_tokens"] <= 12


def test_metrics_empty_without_iter_perf_stats(plain_server):
    completion(plain_server)
    assert http("GET", plain_server.url + "/metrics") == (200, [])
    assert http("GET", plain_server.url + "/perf_metrics") == (200, [])


def test_spec_metrics_and_perf_metrics(spec_server):
    started = time.time()
    status, body = chat(spec_server, max_tokens=64)
    elapsed = time.time() - started
    assert status == 200
    assert elapsed < 2.0, "a 64-token completion should take under ~2 s by default (took %.2fs)" % elapsed
    tokens = body["usage"]["completion_tokens"]

    status, stats = http("GET", spec_server.url + "/metrics")
    assert status == 200 and isinstance(stats, list) and stats
    for entry in stats:
        for key in ("iter", "iterLatencyMS", "gpuMemUsage", "numActiveRequests", "kvCacheStats",
                    "specDecodingStats"):
            assert key in entry
        spec = entry["specDecodingStats"]
        assert spec["numDraftTokens"] == 3
        assert 0 <= spec["numAcceptedTokens"] <= spec["numDraftTokens"]
        assert spec["acceptanceLength"] == spec["numAcceptedTokens"] + 1
        assert 0 < spec["draftOverhead"] < 1
        assert set(entry["kvCacheStats"]) >= {"maxNumBlocks", "freeNumBlocks", "usedNumBlocks", "tokensPerBlock",
                                              "cacheHitRate", "reusedBlocks", "missedBlocks"}
    assert sum(e["specDecodingStats"]["acceptanceLength"] for e in stats) == tokens
    assert http("GET", spec_server.url + "/metrics") == (200, [])        # emptied on read

    status, perf = http("GET", spec_server.url + "/perf_metrics")
    assert status == 200 and len(perf) == 1
    item = perf[0]["perf_metrics"]
    assert {"first_iter", "last_iter", "timing_metrics", "kv_cache_metrics"} <= set(item)
    sd = item["speculative_decoding"]
    assert sd["total_draft_tokens"] == 3 * len(stats)
    assert sd["total_accepted_draft_tokens"] == tokens - len(stats)
    assert sd["acceptance_rate"] == pytest.approx(sd["total_accepted_draft_tokens"] / sd["total_draft_tokens"])
    assert http("GET", spec_server.url + "/perf_metrics") == (200, [])


def test_iter_stats_without_speculation_have_no_spec_block(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    path = write_yaml(tmp_path / "extra.yml", "enable_iter_perf_stats: true\n")
    with running_server(standin_env, [MODEL, "--extra_llm_api_options", path], tmp_path) as server:
        body = completion(server, max_tokens=8)[1]
        stats = http("GET", server.url + "/metrics")[1]
        perf = http("GET", server.url + "/perf_metrics")[1]
    assert len(stats) == body["usage"]["completion_tokens"]      # one token per step
    assert all("specDecodingStats" not in e for e in stats)
    assert perf == []                                              # return_perf_metrics not set


def test_perf_metrics_needs_max_requests(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    path = write_yaml(tmp_path / "extra.yml", "return_perf_metrics: true\n")
    with running_server(standin_env, [MODEL, "--extra_llm_api_options", path], tmp_path) as server:
        completion(server)
        assert http("GET", server.url + "/perf_metrics")[1] == []


def test_speedup_model_has_an_optimum():
    from trtllm_standin import sim  # pylint: disable=import-outside-toplevel

    def speedup(decoding_type, k):
        return sim.SpecProfile({"decoding_type": decoding_type, "max_draft_len": k}).speedup()

    eagle = {k: speedup("Eagle", k) for k in range(1, 9)}
    best = max(eagle, key=eagle.get)
    assert best in (3, 4), eagle
    assert eagle[best] > eagle[1] and eagle[best] > eagle[8]
    draft_target = {k: speedup("DraftTarget", k) for k in range(1, 9)}
    assert max(draft_target, key=draft_target.get) < best
    assert max(draft_target.values()) < max(eagle.values())
    # Per-position acceptance decreases with position, and is lower for Draft-Target.
    alphas = sim.SpecProfile({"decoding_type": "Eagle3", "max_draft_len": 4}).alphas()
    assert alphas == sorted(alphas, reverse=True)
    assert sim.SpecProfile({"decoding_type": "Draft_Target", "max_draft_len": 1}).alphas()[0] < alphas[0]
    assert sim.SpecProfile(None).speedup() == 1.0


def test_draft_length_changes_measured_acceptance(standin_env, tmp_path):
    """Longer drafts: lower acceptance rate, and the text does not change (greedy verification)."""
    hf_download(standin_env, MODEL)
    draft = hf_download(standin_env, DRAFT, "--local-dir", str(tmp_path / "draft"))
    results = {}
    for k in (1, 6):
        path = write_yaml(tmp_path / ("k%d.yml" % k),
                          "return_perf_metrics: true\nperf_metrics_max_requests: 10\nspeculative_config:\n"
                          "  decoding_type: Eagle\n  max_draft_len: %d\n  speculative_model_dir: %s\n" % (k, draft))
        with running_server(standin_env, [MODEL, "--extra_llm_api_options", path], tmp_path) as server:
            texts = [completion(server, prompt="prompt %d" % i, max_tokens=200)[1]["choices"][0]["text"]
                     for i in range(5)]
            perf = http("GET", server.url + "/perf_metrics")[1]
        accepted = sum(p["perf_metrics"]["speculative_decoding"]["total_accepted_draft_tokens"] for p in perf)
        drafted = sum(p["perf_metrics"]["speculative_decoding"]["total_draft_tokens"] for p in perf)
        results[k] = (accepted / drafted, texts)
    assert results[1][0] > results[6][0]
    assert results[1][1] == results[6][1]
