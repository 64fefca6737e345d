"""The Triton stand-in image (local/tritonserver-standin:<release>-trtllm-python-py3), marker: docker.

Builds the lab's images (`lab build`, a hash check when nothing changed), then runs its own containers named
tritontest-* (removed at the end): the model repository template, launch_triton_server.py (with fake and real
mpirun), tritonserver's load failures, the HTTP generate extension, perf metrics, streaming, the metrics port,
STANDIN_SPEC_PROFILE, signals, and the transformers shim. A lab that is up is left alone.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import pytest
import yaml

from lab_helpers import DRAFT, LAB_SCRIPT, MODEL, http

from trtllm_standin import release, sim

pytestmark = pytest.mark.docker

IMAGE = "local/tritonserver-standin:26.07-trtllm-python-py3"
TEMPLATE = "/app/all_models/llmapi"
LAUNCHER = "/app/scripts/launch_triton_server.py"
MODEL_NAME = "tensorrt_llm"
TOKEN_RE = re.compile(r"\w+|[^\w\s]")   # what a token is for the stand-in (sim.TOKEN_RE), written out again
SPEC_YAML = """\
model: {model}
backend: pytorch
tensor_parallel_size: 1
pipeline_parallel_size: 1
speculative_config:
  decoding_type: Eagle
  max_draft_len: 3
  speculative_model_dir: /models/draft
triton_config:
  max_batch_size: 0
  decoupled: {decoupled}
"""
PLAIN_YAML = """\
model: {model}
backend: pytorch
triton_config:
  max_batch_size: 0
  decoupled: true
"""
PROFILE = {"acceptance": [1.0, 1.0, 0.0], "target_step_ms": 10.0, "draft_token_ms": 0.0, "verify_token_ms": 0.0,
           "seed": 1}
PERF_KEYS = ("kv_cache_reused_block", "kv_cache_missed_block", "kv_cache_alloc_new_blocks",
             "kv_cache_alloc_total_blocks", "kv_cache_hit_rate", "arrival_time_ns", "first_scheduled_time_ns",
             "first_token_time_ns", "last_token_time_ns", "acceptance_rate", "total_accepted_draft_tokens",
             "total_draft_tokens")


def sh(cmd, check=True, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if check and proc.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout, proc.stderr))
    return proc


def docker_available():
    if os.geteuid() != 0:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0
    except OSError:
        return False


class Box:
    """One tritontest-* container of the image (main process sleep infinity)."""

    def __init__(self, env=None):
        self.name = "tritontest-" + uuid.uuid4().hex[:10]
        args = ["docker", "run", "-d", "--rm", "--name", self.name, "-e", "STANDIN_QUIET_BANNER=1"]
        for key, value in (env or {}).items():
            args += ["-e", "%s=%s" % (key, value)]
        sh(args + [IMAGE, "sleep", "infinity"])
        self.ip = sh(["docker", "inspect", "-f", "{{.NetworkSettings.IPAddress}}", self.name]).stdout.strip()

    def run(self, script, check=True, env=None, timeout=60):
        """bash -c SCRIPT in the container -> CompletedProcess."""
        args = ["docker", "exec"]
        for key, value in (env or {}).items():
            args += ["-e", "%s=%s" % (key, value)]
        return sh(args + [self.name, "bash", "-c", script], check=check, timeout=timeout)

    def write(self, path, text):
        self.run("mkdir -p %s && cat > %s <<'EOF'\n%sEOF" % (shlex.quote(os.path.dirname(path)), shlex.quote(path),
                                                             text))

    def url(self, port):
        return "http://%s:%d" % (self.ip, port)

    def wait_ready(self, port, log, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if http("GET", self.url(port) + "/v2/health/ready", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("Triton on port %d not ready:\n%s" % (port, self.run("cat %s" % log, check=False).stdout))

    def remove(self):
        sh(["docker", "rm", "-f", self.name], check=False)


def repository(box, path, model_yaml):
    """A copy of the image's template with its own model.yaml."""
    box.run("rm -rf %s && cp -R %s %s" % (path, TEMPLATE, path))
    box.write(path + "/tensorrt_llm/1/model.yaml", model_yaml)


def generate(box, port, body, model=MODEL_NAME, stream=False):
    return http("POST", box.url(port) + "/v2/models/%s/%s" % (model, "generate_stream" if stream else "generate"),
                body)


def sse(box, port, body):
    """(status, content type, [event dict]) of generate_stream."""
    req = urllib.request.Request(box.url(port) + "/v2/models/%s/generate_stream" % MODEL_NAME, method="POST",
                                 data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, ctype, raw = resp.status, resp.headers["content-type"], resp.read().decode()
    except urllib.error.HTTPError as exc:
        status, ctype, raw = exc.code, exc.headers["content-type"], exc.read().decode()
    assert raw.endswith("\n\n"), raw
    events = [json.loads(chunk[len("data: "):]) for chunk in raw.split("\n\n") if chunk]
    return status, ctype, events


def metrics(box, port):
    status, text = http("GET", box.url(port) + "/metrics")
    assert status == 200
    out = {}
    for line in text.splitlines():
        match = re.match(r'^(\w+)\{([^}]*)\} (\S+)$', line)
        if match and 'model="tensorrt_llm"' in match.group(2) and 'version="1"' in match.group(2):
            reason = re.search(r'reason="(\w+)"', match.group(2))
            out[match.group(1) + (":" + reason.group(1) if reason else "")] = float(match.group(3))
    return out


def a_prompt(stem, max_tokens):
    """A prompt for which the generator would say more than max_tokens tokens (so max_tokens cuts it)."""
    for i in range(200):
        prompt = "%s, take %d." % (stem, i)
        if sim.natural_length(MODEL, prompt, max_tokens) > max_tokens + 8:
            return prompt
    raise AssertionError("no such prompt")


# -- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def image():
    if not docker_available():
        pytest.skip("needs root and a running Docker engine")
    proc = sh([LAB_SCRIPT, "build"], check=False, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    return IMAGE


@pytest.fixture(scope="module")
def box(image):  # pylint: disable=unused-argument
    """A container with the model and the draft in its HF cache."""
    container = Box({"STANDIN_STARTUP_SECONDS": "1", "STANDIN_TIME_SCALE": "0.2"})
    try:
        container.run("hf download %s --quiet && hf download %s --local-dir /models/draft --quiet" % (MODEL, DRAFT))
        yield container
    finally:
        container.remove()


@pytest.fixture(scope="module")
def served(box):
    """Three servers in the box: the tutorial's launch (mpirun, EAGLE-3, decoupled false) on 8000-8002; a
    decoupled plain model read through LLM_CONFIG_PATH on 9000-9002; EAGLE-3 with a measured profile on 9100-9102."""
    repository(box, "/srv/spec", SPEC_YAML.format(model=MODEL, decoupled="false"))
    out = box.run("cd /tmp && python3 %s --model_repo=/srv/spec/ >/tmp/spec.log 2>&1; echo rc=$?" % LAUNCHER).stdout
    assert out.strip() == "rc=0"
    box.wait_ready(8000, "/tmp/spec.log")
    repository(box, "/srv/stream", "")
    box.run("rm /srv/stream/tensorrt_llm/1/model.yaml")
    box.write("/srv/stream/tensorrt_llm/1/stream.yaml", PLAIN_YAML.format(model=MODEL))
    box.run("LLM_CONFIG_PATH=stream.yaml nohup tritonserver --model-repository=/srv/stream --http-port=9000 "
            "--grpc-port=9001 --metrics-port=9002 >/tmp/stream.log 2>&1 &")
    box.run("STANDIN_SPEC_PROFILE=%s STANDIN_TIME_SCALE=1 nohup tritonserver --model-repository=/srv/spec "
            "--http-port=9100 --grpc-port=9101 --metrics-port=9102 >/tmp/profile.log 2>&1 &"
            % shlex.quote(json.dumps(PROFILE)))
    box.wait_ready(9000, "/tmp/stream.log")
    box.wait_ready(9100, "/tmp/profile.log")
    return box


# -- the image ---------------------------------------------------------------------------------------

def test_release_1_2_x_has_its_own_draft_key_and_validates_eagle():
    # 1.2.0 and 1.2.1 renamed rc6's speculative_model_dir to speculative_model (the old name an alias) and
    # validate EagleDecodingConfig with pydantic ("4" is read as 4, where rc6 keeps the string and fails).
    for version in ("1.2.0", "1.2.1"):
        new = {"speculative_config": {"decoding_type": "Eagle", "max_draft_len": "3", "speculative_model": "/d"}}
        options, dummy = release.check(new, version)
        assert options["speculative_config"]["max_draft_len"] == 3
        old = {"speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": "/d"}}
        assert release.check(old, version)[0]["speculative_config"]["max_draft_len"] == 3
        both = {"speculative_config": dict(old["speculative_config"], speculative_model="/d")}
        with pytest.raises(release.ReleaseError):
            release.check(both, version)
        with pytest.raises(release.ReleaseError, match="EAGLE3 draft model must be specified"):
            release.check({"speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3}}, version)
    with pytest.raises(release.ReleaseError, match="speculative_model"):
        release.check({"speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3,
                                              "speculative_model": "/d"}}, "1.2.0rc6")
    with pytest.raises(release.ReleaseError, match="not a release the stand-in models"):
        release.check({}, "1.2.2")


def test_image_labels_environment_and_commands(image):
    labels = json.loads(sh(["docker", "image", "inspect", "-f", "{{json .Config.Labels}}", image]).stdout)
    assert labels["com.nvidia.tensorrt-llm.version"] == "1.2.1"
    assert labels["org.opencontainers.image.version"] == "26.07"
    env = dict(e.split("=", 1) for e in json.loads(
        sh(["docker", "image", "inspect", "-f", "{{json .Config.Env}}", image]).stdout))
    assert env["TRTLLM_VERSION"] == "1.2.1"
    assert env["NVIDIA_TRITON_SERVER_VERSION"] == "26.07" and env["TRITON_SERVER_VERSION"] == "2.71.0"
    out = sh(["docker", "run", "--rm", "--name", "tritontest-" + uuid.uuid4().hex[:10], "-e", "STANDIN_QUIET_BANNER=1",
              image, "bash", "-c", "command -v tritonserver hf huggingface-cli mpirun; hf version"]).stdout.split()
    assert out[:4] == ["/opt/tritonserver/bin/tritonserver", "/usr/local/bin/hf", "/usr/local/bin/huggingface-cli",
                       "/usr/bin/mpirun"]
    assert "huggingface_hub" in out[4]


def test_model_repository_template(box):
    files = box.run("cd %s && find . -type f | sort" % TEMPLATE).stdout.split()
    assert files == ["./tensorrt_llm/1/model.py", "./tensorrt_llm/1/model.yaml", "./tensorrt_llm/config.pbtxt"]
    assert yaml.safe_load(box.run("cat %s/tensorrt_llm/1/model.yaml" % TEMPLATE).stdout) == {
        "model": "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "backend": "pytorch", "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1, "triton_config": {"max_batch_size": 0, "decoupled": False}}
    model_py = box.run("cat %s/tensorrt_llm/1/model.py" % TEMPLATE).stdout
    assert "stand-in" in model_py and "Copyright" not in model_py
    config = box.run("cat %s/tensorrt_llm/config.pbtxt" % TEMPLATE).stdout
    body = re.sub(r"#[^\n]*", "", config)
    assert re.search(r'^name: "tensorrt_llm"$', body, re.M) and re.search(r'^backend: "python"$', body, re.M)
    assert re.search(r"^max_batch_size: 0$", body, re.M)
    section = {k: re.search(r"^%s \[(.*?)^\]" % k, body, re.M | re.S).group(1) for k in ("input", "output")}
    block = re.compile(r'\{\s*name: "(\w+)"\s*data_type: (\w+)\s*dims: \[ (-?\d+) \]\s*(optional: true)?\s*\}')
    inputs = {m[0]: (m[1], int(m[2]), bool(m[3])) for m in block.findall(section["input"])}
    outputs = {m[0]: (m[1], int(m[2])) for m in block.findall(section["output"])}
    assert inputs == {
        "text_input": ("TYPE_STRING", -1, False), "streaming": ("TYPE_BOOL", 1, True),
        "sampling_param_best_of": ("TYPE_INT32", 1, True), "sampling_param_temperature": ("TYPE_FP32", 1, True),
        "sampling_param_top_k": ("TYPE_INT32", 1, True), "sampling_param_top_p": ("TYPE_FP32", 1, True),
        "sampling_param_frequency_penalty": ("TYPE_FP32", 1, True),
        "sampling_param_presence_penalty": ("TYPE_FP32", 1, True),
        "sampling_param_max_tokens": ("TYPE_INT32", 1, True), "sampling_param_stop": ("TYPE_STRING", -1, True),
        "sampling_param_seed": ("TYPE_UINT64", 1, True),
        "sampling_param_exclude_input_from_output": ("TYPE_BOOL", 1, True),
        "sampling_param_return_perf_metrics": ("TYPE_BOOL", 1, True)}
    assert outputs["text_output"] == ("TYPE_STRING", -1)
    assert set(outputs) == {"text_output"} | set(PERF_KEYS)
    for key in PERF_KEYS:
        expected = ("TYPE_INT64" if key.endswith("_ns") else "TYPE_FP32" if key in ("acceptance_rate",
                    "kv_cache_hit_rate") else "TYPE_INT32")
        assert outputs[key][0] == expected, key


# -- launch_triton_server.py -------------------------------------------------------------------------

RECORDER = "#!/usr/bin/python3\nimport json, sys, time\njson.dump(sys.argv[1:], open('%s', 'w'))\ntime.sleep(5)\n"


@pytest.mark.parametrize("args, expected", [
    ("--model_repo=/r/", ["mpirun", "--allow-run-as-root", "-n", "1", "/opt/tritonserver/bin/tritonserver",
                          "--model-repository=/r/", "--grpc-port=8001", "--http-port=8000", "--metrics-port=8002",
                          "--disable-auto-complete-config", "--backend-config=python,shm-region-prefix-name=prefix0_",
                          ":"]),
    ("--model_repo /r --http_port 7000 --grpc_port 7001 --metrics_port 7002 --log --log-file /tmp/t.log",
     ["mpirun", "--allow-run-as-root", "-n", "1", "/opt/tritonserver/bin/tritonserver", "--model-repository=/r",
      "--grpc-port=7001", "--http-port=7000", "--metrics-port=7002", "--log-verbose=3", "--log-file=/tmp/t.log",
      "--disable-auto-complete-config", "--backend-config=python,shm-region-prefix-name=prefix0_", ":"]),
    ("--model_repo=/r --no-mpi --tritonserver /fake/bin/fake-triton --exit_timeout 9",
     ["fake-triton", "--model-repository=/r", "--exit-timeout-secs=9", "--grpc-port=8001", "--http-port=8000",
      "--metrics-port=8002", "--disable-auto-complete-config",
      "--backend-config=python,shm-region-prefix-name=prefix0_"]),
    ("--model_repo=/r --world_size 2 --trtllm_llmapi_launch",
     ["mpirun", "--allow-run-as-root", "-n", "1", "trtllm-llmapi-launch", "/opt/tritonserver/bin/tritonserver",
      "--model-repository=/r", "--grpc-port=8001", "--http-port=8000", "--metrics-port=8002",
      "--disable-auto-complete-config", "--backend-config=python,shm-region-prefix-name=prefix0_", ":", "-n", "1",
      "trtllm-llmapi-launch", "/opt/tritonserver/bin/tritonserver", "--model-repository=/r", "--grpc-port=8001",
      "--http-port=8000", "--metrics-port=8002", "--model-control-mode=explicit", "--load-model=tensorrt_llm",
      "--disable-auto-complete-config", "--backend-config=python,shm-region-prefix-name=prefix1_", ":"]),
])
def test_launcher_builds_the_release_command_and_returns_at_once(box, args, expected):
    """A recording mpirun (and tritonserver) that runs 5 s: the launcher must not wait for it."""
    record = "/tmp/argv-%s.json" % uuid.uuid4().hex[:8]
    box.write("/fake/bin/mpirun", RECORDER % record)
    box.write("/fake/bin/fake-triton", RECORDER % record)
    box.run("chmod +x /fake/bin/*")
    started = time.time()
    proc = box.run("PATH=/fake/bin:$PATH python3 %s %s" % (LAUNCHER, args), check=False)
    elapsed = time.time() - started
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 3.0, "the launcher waited for its server (%.1fs)" % elapsed
    box.run("for i in $(seq 50); do [ -s %s ] && break; sleep 0.1; done" % record)
    argv = json.loads(box.run("cat %s" % record).stdout)
    assert [expected[0]] + argv == expected


def test_launcher_refuses_while_a_tritonserver_runs(box):
    box.run("mkdir -p /fake/running && cp /bin/sleep /fake/running/tritonserver")
    box.run("nohup /fake/running/tritonserver 30 >/dev/null 2>&1 &")
    pid = box.run("sleep 0.3; pgrep -x -f '/fake/running/tritonserver 30'").stdout.split()[0]
    try:
        proc = box.run("python3 %s --model_repo=/r/" % LAUNCHER, check=False)
        assert proc.returncode == 1
        assert ("RuntimeError: tritonserver process(es) already found with PID(s): " in proc.stderr
                and pid in proc.stderr and "Or use --force." in proc.stderr)
        record = "/tmp/argv-force.json"
        box.write("/fake/bin/mpirun", RECORDER % record)
        box.run("chmod +x /fake/bin/mpirun")
        proc = box.run("PATH=/fake/bin:$PATH python3 %s --model_repo=/r/ --force" % LAUNCHER, check=False)
        assert proc.returncode == 0 and "already found with PID(s)" in proc.stderr and "--force" not in proc.stderr
        box.run("for i in $(seq 50); do [ -s %s ] && break; sleep 0.1; done; test -s %s" % (record, record))
    finally:
        box.run("kill %s" % pid, check=False)


# -- tritonserver: loading ---------------------------------------------------------------------------

TC = "triton_config: {{max_batch_size: 0, decoupled: false}}\n"   # a valid triton_config (format() template)


@pytest.mark.parametrize("case, change, reason", [
    ("yaml", "model.yaml:model: [unclosed\n",
     "Internal: TritonModelException: Failed to parse YAML engine config: "),
    ("missing", "rm:model.yaml",
     "Internal: AssertionError: 'model.yaml' containing TRT-LLM engine args not found in "
     "'/srv/f-missing/tensorrt_llm/1'"),
    ("decoupled", "model.yaml:model: {model}\ntriton_config:\n  max_batch_size: 0\n",
     "Internal: KeyError: 'decoupled'"),
    ("no-triton-config", "model.yaml:model: {model}\n", "Internal: KeyError: 'triton_config'"),
    ("not-cached", "model.yaml:model: nvidia/Not-Downloaded\n" + TC,
     "Internal: huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache"),
    ("option", "model.yaml:model: {model}\nmax_batch_sizee: 8\n" + TC, "Extra inputs are not permitted"),
    ("draft", "model.yaml:model: {model}\nspeculative_config: {{decoding_type: Eagle, max_draft_len: 3, "
              "speculative_model_dir: /models/none}}\n" + TC, "speculative_config.speculative_model"),
    ("tp2", "model.yaml:model: {model}\ntensor_parallel_size: 2\n" + TC,
     "Internal: RuntimeError: tensor_parallel_size x pipeline_parallel_size = 2 needs 2 GPUs"),
    ("backend", "model.yaml:model: {model}\nbackend: tensorrt\n" + TC, "backend 'tensorrt' is not simulated"),
])
def test_load_failures_end_the_server_before_http(box, case, change, reason):
    path = "/srv/f-%s" % case
    repository(box, path, SPEC_YAML.format(model=MODEL, decoupled="false"))
    target, _sep, text = change.partition(":")
    if target == "rm":
        box.run("rm %s/tensorrt_llm/1/%s" % (path, text))
    else:
        box.write("%s/tensorrt_llm/1/%s" % (path, target), text.format(model=MODEL))
    started = time.time()
    proc = box.run("STANDIN_STARTUP_SECONDS=0 tritonserver --model-repository=%s --http-port=9500 --grpc-port=9501 "
                   "--metrics-port=9502" % path, check=False)
    assert time.time() - started < 10
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.rstrip().endswith("error: creating server: Internal - failed to load all models")
    line = [l for l in proc.stderr.splitlines() if "model_lifecycle.cc:654]" in l]
    assert len(line) == 1 and re.match(r"^E\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ model_lifecycle\.cc:654\] ", line[0])
    message = json.loads(line[0].split("] ", 1)[1])
    assert message.startswith("failed to load 'tensorrt_llm' version 1: ")
    assert reason in message, message
    assert "Started HTTPService" not in proc.stdout + proc.stderr
    assert "| tensorrt_llm | 1       | UNAVAILABLE: " in proc.stdout


def test_sigterm_stops_the_server_quickly(box):
    repository(box, "/srv/sig", PLAIN_YAML.format(model=MODEL))
    out = box.run("STANDIN_STARTUP_SECONDS=0 tritonserver --model-repository=/srv/sig --http-port=9300 "
                  "--grpc-port=9301 --metrics-port=9302 >/tmp/sig.log 2>&1 & pid=$!; "
                  "for i in $(seq 100); do curl -sf localhost:9300/v2/health/ready && break; sleep 0.1; done; "
                  "pgrep -x tritonserver | grep -qx $pid && echo named; "
                  "start=$(date +%s%N); kill -TERM $pid; wait $pid; rc=$?; "
                  "echo rc=$rc ms=$(( ($(date +%s%N) - start) / 1000000 ))").stdout
    assert "named" in out, "the server's process is not called tritonserver"
    rc, ms = re.search(r"rc=(\d+) ms=(\d+)", out).groups()
    assert rc == "0" and int(ms) < 2000
    log = box.run("cat /tmp/sig.log").stdout
    assert "Signal (15) received." in log and "successfully unloaded 'tensorrt_llm' version 1" in log


# -- tritonserver: serving ---------------------------------------------------------------------------

def test_started_through_mpirun_with_triton_logs(served):
    log = served.run("cat /tmp/spec.log").stdout
    for line in ('grpc_server.cc:2584] "Started GRPCInferenceService at 0.0.0.0:8001"',
                 'http_server.cc:4971] "Started HTTPService at 0.0.0.0:8000"',
                 'http_server.cc:400] "Started Metrics Service at 0.0.0.0:8002"',
                 'model_lifecycle.cc:849] "successfully loaded \'tensorrt_llm\'"'):
        assert re.search(r"^I\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ " + re.escape(line) + "$", log, re.M), line
    assert log.index("successfully loaded") < log.index("Started GRPCInferenceService")
    tree = served.run("ps -o pid=,ppid=,comm= -e").stdout
    procs = {int(p): (int(pp), c) for p, pp, c in (l.split() for l in tree.splitlines())}
    triton = [p for p, (pp, c) in procs.items() if c == "tritonserver" and procs.get(pp, (0, ""))[1] == "mpirun"]
    assert len(triton) == 1, tree
    with socket.create_connection((served.ip, 8001), timeout=5):
        pass   # gRPC: only a listening socket


def test_health_and_metadata(served):
    for path in ("/v2/health/live", "/v2/health/ready", "/v2/models/tensorrt_llm/ready"):
        assert http("GET", served.url(8000) + path) == (200, ""), path
    assert http("GET", served.url(8000) + "/v2/models/nope/ready")[0] == 400
    status, meta = http("GET", served.url(8000) + "/v2/models/tensorrt_llm")
    assert status == 200
    assert (meta["name"], meta["versions"], meta["platform"]) == ("tensorrt_llm", ["1"], "")
    inputs = {i["name"]: (i["datatype"], i["shape"]) for i in meta["inputs"]}
    assert inputs["text_input"] == ("BYTES", [-1]) and inputs["sampling_param_seed"] == ("UINT64", [1])
    assert inputs["streaming"] == ("BOOL", [1]) and len(inputs) == 13
    outputs = {o["name"]: o["datatype"] for o in meta["outputs"]}
    assert outputs["text_output"] == "BYTES" and outputs["acceptance_rate"] == "FP32"
    assert outputs["arrival_time_ns"] == "INT64" and outputs["total_draft_tokens"] == "INT32"


def test_generate_text_defaults_and_determinism(served):
    prompt = a_prompt("Tell me about speculative decoding", 32)
    status, body = generate(served, 8000, {"text_input": prompt})
    assert status == 200
    assert set(body) == {"model_name", "model_version", "text_output"}
    assert (body["model_name"], body["model_version"]) == ("tensorrt_llm", "1")
    text = body["text_output"]
    assert text.startswith(prompt)
    assert len(text[len(prompt):].split()) == 32          # SamplingParams.max_tokens defaults to 32
    assert generate(served, 8000, {"text_input": prompt})[1]["text_output"] == text
    request = {"text_input": prompt, "sampling_param_max_tokens": 5, "sampling_param_exclude_input_from_output": True,
               "parameters": {"sampling_param_temperature": 0.0}, "max_tokens": 99}
    status, short = generate(served, 8000, request)
    assert status == 200
    assert not short["text_output"].startswith(prompt) and len(short["text_output"].split()) == 5
    full = generate(served, 8000, {"text_input": [prompt], "sampling_param_max_tokens": 5})[1]["text_output"]
    assert full == prompt + short["text_output"]


def test_perf_metrics_are_strings_with_real_values(served):
    body = {"text_input": a_prompt("Measure this request", 30), "sampling_param_max_tokens": 30,
            "sampling_param_return_perf_metrics": True}
    status, first = generate(served, 8000, body)
    assert status == 200
    assert set(first) == {"model_name", "model_version", "text_output"} | set(PERF_KEYS)
    assert all(isinstance(first[k], str) for k in PERF_KEYS), first
    drafted, accepted = int(first["total_draft_tokens"]), int(first["total_accepted_draft_tokens"])
    steps = drafted // 3
    assert drafted == 3 * steps and steps + accepted == 30    # EAGLE-3, K=3: every step drafts 3, keeps 1 + accepted
    assert float(first["acceptance_rate"]) == pytest.approx(accepted / float(drafted))
    times = [int(first[k]) for k in ("arrival_time_ns", "first_scheduled_time_ns", "first_token_time_ns",
                                     "last_token_time_ns")]
    assert times == sorted(times) and times[3] - times[0] > 1e6
    assert first["kv_cache_reused_block"] == "0" and first["kv_cache_hit_rate"] == "0.0"
    assert int(first["kv_cache_missed_block"]) >= 1 and int(first["kv_cache_alloc_new_blocks"]) >= 1
    second = generate(served, 8000, body)[1]                 # the same prompt again: its blocks are reused
    assert int(second["kv_cache_reused_block"]) >= 1 and second["kv_cache_hit_rate"] == "1.0"
    assert second["total_draft_tokens"] == first["total_draft_tokens"]


def test_plain_model_perf_metrics_have_no_drafts(served):
    status, body = generate(served, 9000, {"text_input": "hi", "sampling_param_max_tokens": 4,
                                           "sampling_param_return_perf_metrics": True})
    assert status == 200
    assert (body["acceptance_rate"], body["total_draft_tokens"], body["total_accepted_draft_tokens"]) == (
        "0.0", "0", "0")


def test_spec_profile_is_honoured(served):
    """acceptance [1, 1, 0] at K=3: every step keeps exactly 2 of 3 draft tokens; steps take 10 ms."""
    status, body = generate(served, 9100, {"text_input": "Profile me", "sampling_param_max_tokens": 24,
                                           "sampling_param_return_perf_metrics": True})
    assert status == 200
    assert (body["total_draft_tokens"], body["total_accepted_draft_tokens"]) == ("24", "16")
    assert body["acceptance_rate"] == str(16 / 24.0)
    assert int(body["last_token_time_ns"]) - int(body["first_token_time_ns"]) >= 60e6   # 7 more steps of 10 ms


@pytest.mark.parametrize("body, status, error", [
    ({}, 400, "[request id: <id_unknown>] expected number of inputs between 1 and 13 but got 0 inputs for model "
              "'tensorrt_llm'. Got input(s) [], but missing required input(s) ['text_input']. Please provide all "
              "required input(s)."),
    ({"id": "r7"}, 400, "[request id: r7] expected number of inputs between 1 and 13 but got 0 inputs"),
    ([{"text_input": "hi"}], 500, "attempt to get members for non-object"),
    (b"{not json", 500, "failed to parse the request JSON buffer: "),
    ({"sampling_param_max_tokens": 4}, 500, "Error generating request: text_input is missing from the request"),
    ({"text_input": "hi", "sampling_param_max_tokens": "ten"}, 500,
     "attempt to access JSON non-signed-integer as signed-integer"),
    ({"text_input": "hi", "streaming": "yes"}, 500, "attempt to access JSON non-boolean as boolean"),
    ({"text_input": "hi", "sampling_param_max_tokens": [1, 2]}, 400,
     "The schema can not convert input 'sampling_param_max_tokens' to tensor with proper shape"),
    ({"text_input": "hi", "streaming": True}, 500,
     "Error generating request: Streaming is only supported in decoupled mode."),
])
def test_generate_errors(served, body, status, error):
    got_status, got = generate(served, 8000, body)
    assert got_status == status and set(got) == {"error"}, got
    assert got["error"].startswith(error), got["error"]


def test_unknown_model(served):
    assert generate(served, 8000, {"text_input": "hi"}, model="gpt") == (
        400, {"error": "Request for unknown model: 'gpt' is not found"})


def test_streaming_on_a_decoupled_model(served):
    body = {"text_input": "Stream this", "sampling_param_max_tokens": 12, "streaming": True}
    status, ctype, events = sse(served, 9000, body)
    assert status == 200 and ctype.startswith("text/event-stream")
    assert len(events) == 12                                   # the plain model: one token per step, one event each
    texts = [e["text_output"] for e in events]
    assert all(e["model_name"] == "tensorrt_llm" and e["model_version"] == "1" for e in events)
    assert all(b.startswith(a) and len(b) > len(a) for a, b in zip(texts, texts[1:]))   # RequestOutput.text: so far
    whole = generate(served, 9000, {"text_input": "Stream this", "sampling_param_max_tokens": 12,
                                    "sampling_param_exclude_input_from_output": True})[1]["text_output"]
    assert texts[-1] == whole
    # Not streaming on generate_stream: one event with everything; streaming on generate: more than one response.
    status, _ctype, single = sse(served, 9000, dict(body, streaming=False))
    assert status == 200 and len(single) == 1 and single[0]["text_output"] == "Stream this" + whole
    status, err = generate(served, 9000, body)
    assert status == 500 and "generate expects model to produce exactly 1 response" in err["error"]
    status, _ctype, refused = sse(served, 8000, body)            # decoupled false
    assert status == 500 and refused == [
        {"error": "Error generating request: Streaming is only supported in decoupled mode."}]


def test_metrics_port_counts_requests(served):
    before = metrics(served, 8002)
    for name in ("nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count",
                 "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                 "nv_inference_request_failure:BACKEND", "nv_model_load_duration_secs"):
        assert name in before, name
    assert before["nv_model_load_duration_secs"] >= 1.0         # STANDIN_STARTUP_SECONDS=1
    for dummy in range(3):
        assert generate(served, 8000, {"text_input": "count me", "sampling_param_max_tokens": 3})[0] == 200
    assert generate(served, 8000, {"text_input": "hi", "streaming": True})[0] == 500   # a backend error
    assert generate(served, 8000, {})[0] == 400                                       # refused before the model
    after = metrics(served, 8002)
    assert after["nv_inference_request_success"] - before["nv_inference_request_success"] == 3
    assert after["nv_inference_count"] - before["nv_inference_count"] == 3
    assert after["nv_inference_exec_count"] - before["nv_inference_exec_count"] == 3
    assert after["nv_inference_request_failure:BACKEND"] - before["nv_inference_request_failure:BACKEND"] == 1
    assert after["nv_inference_request_duration_us"] > before["nv_inference_request_duration_us"]


# -- the transformers shim -----------------------------------------------------------------------------

COUNT = ("import json, sys\nfrom transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained(sys.argv[1])\n"
         "print(json.dumps([len(tok.encode(t, add_special_tokens=False)) for t in json.load(sys.stdin)] + "
         "[len(tok.encode('Hello, world!'))]))\n")


def test_tokenizer_counts_tokens_like_the_generator(served):
    texts = [generate(served, 8000, {"text_input": p, "sampling_param_max_tokens": 40,
                                     "sampling_param_exclude_input_from_output": True})[1]["text_output"]
             for p in ("One", "Two, three.", "Count the commas, please; and the dots.")]
    proc = sh(["docker", "exec", "-i", "-e", "HF_HUB_OFFLINE=1", served.name, "python3", "-c", COUNT, MODEL],
              input=json.dumps(texts))
    counts = json.loads(proc.stdout)
    assert counts[:-1] == [len(TOKEN_RE.findall(t)) for t in texts]
    assert counts[-1] == 5   # "Hello" "," "world" "!" + the BOS of add_special_tokens=True


def test_tokenizer_honours_hf_hub_offline(served):
    load = "python3 -c 'from transformers import AutoTokenizer; AutoTokenizer.from_pretrained(\"spark-lab/%s\")'"
    proc = served.run(load % "none", env={"HF_HUB_OFFLINE": "1"}, check=False)
    assert proc.returncode == 1
    assert "OSError: We couldn't connect to 'https://huggingface.co' to load the files" in proc.stderr
    proc = served.run(load % "fetched", check=False)             # online: the lab's hub fills the cache
    assert proc.returncode == 0, proc.stderr
    listing = served.run("ls /root/.cache/huggingface/hub").stdout.split()
    assert "models--spark-lab--fetched" in listing and "models--spark-lab--none" not in listing


def test_trtllm_standin_has_the_shim_too(image):  # pylint: disable=unused-argument
    out = sh(["docker", "run", "--rm", "--name", "tritontest-" + uuid.uuid4().hex[:10], "-e", "STANDIN_QUIET_BANNER=1",
              "local/tensorrt-llm-standin:1.2.0rc6", "python3", "-c",
              "import transformers; print(transformers.AutoTokenizer.from_pretrained.__qualname__)"]).stdout
    assert out.strip() == "AutoTokenizer.from_pretrained"
