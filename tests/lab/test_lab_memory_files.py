"""The lab's simulated memory (each node's /proc/meminfo, `lab meminfo`), its file server (the fake gpt-oss tiktoken
encodings) and the TRT-LLM stand-in's need for those encodings when it serves gpt-oss.

The stand-in tests at the top run its code on the host (no docker). The others (marker docker) bring up their own lab
instance (SPARK_LAB_PREFIX=labmem-, two single Sparks, a private SPARK_LAB_ROOT) beside any other, and take it down.
"""

import base64
import hashlib
import os
import shutil
import subprocess
import time

import pytest

from lab_helpers import LAB_DIR, LAB_SCRIPT, hf_download, running_server, serve_cmd
from test_lab_docker import dexec, docker_available, sh

ENCODINGS = os.path.join(LAB_DIR, "files", "encodings")
NAMES = ("o200k_base.tiktoken", "cl100k_base.tiktoken")
OPENAI_SHA256 = {"o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                 "cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"}
GPT_OSS = "openai/gpt-oss-120b"
HARMONY_OFFLINE = ("openai_harmony.HarmonyError: error downloading or loading vocab file: "
                   "failed to download or load vocab file")
INVALID = "openai_harmony.HarmonyError: invalid tiktoken vocab file: "
STANDIN_IMAGE = "local/tensorrt-llm-standin:1.2.0rc6"

PREFIX = "labmem-"
NODE, OTHER = "single1-a", "single2-a"
CNODE, COTHER = PREFIX + NODE, PREFIX + OTHER
FILES = PREFIX + "spark-lab-files"
DEFAULT_TOTAL_KB, DEFAULT_AVAILABLE_KB = 125904132, 117440512


def instance_snapshot():
    """This instance's containers and networks (others may come and go meanwhile: other labs, molecule)."""
    containers = sh(["docker", "ps", "-a", "--format", "{{.Names}}"]).stdout.split()
    networks = sh(["docker", "network", "ls", "--format", "{{.Name}}"]).stdout.split()
    return sorted(n for n in containers + networks if n.startswith(PREFIX))


def lab_sums():
    sums = {}
    with open(os.path.join(ENCODINGS, "SHA256SUMS"), encoding="utf-8") as handle:
        for line in handle:
            digest, name = line.split()
            sums[name] = digest
    return sums


def parse_meminfo(text):
    values = {}
    for line in text.splitlines():
        key, value = line.split(":", 1)
        values[key] = int(value.split()[0])
    return values


# -- the fake encodings ---------------------------------------------------------------------------

def test_fake_encodings_are_tiktoken_files_with_their_own_checksums():
    sums = lab_sums()
    assert sorted(sums) == sorted(NAMES)
    for name in NAMES:
        with open(os.path.join(ENCODINGS, name), "rb") as handle:
            raw = handle.read()
        assert hashlib.sha256(raw).hexdigest() == sums[name]
        assert sums[name] != OPENAI_SHA256[name]       # fakes: the lab inventory must give these checksums
        tokens, ranks = set(), []
        for line in raw.decode("ascii").splitlines():
            token, rank = line.split(" ")
            tokens.add(base64.b64decode(token, validate=True))
            ranks.append(int(rank))
        assert ranks == list(range(len(ranks))) and len(tokens) == len(ranks) >= 300
        assert {bytes([b]) for b in range(256)} <= tokens   # every single byte, as a byte-level BPE has


# -- the stand-in: gpt-oss needs its encodings (no docker) -----------------------------------------------

def serve_gpt_oss(env, model=GPT_OSS):
    return subprocess.run(serve_cmd([model, "--port", "1"]), env=env, capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.fixture
def gpt_oss_env(standin_env):
    hf_download(standin_env, GPT_OSS)
    standin_env.pop("TIKTOKEN_ENCODINGS_BASE", None)
    return standin_env


def encodings_dir(tmp_path, **contents):
    """A TIKTOKEN_ENCODINGS_BASE with the lab's fakes, where contents replace (bytes) or leave out (None) files."""
    path = tmp_path / "enc"
    path.mkdir()
    for name in NAMES:
        key = name.split(".", maxsplit=1)[0]
        if key in contents and contents[key] is None:
            continue
        data = contents.get(key)
        if data is None:
            shutil.copy(os.path.join(ENCODINGS, name), str(path / name))
        else:
            (path / name).write_bytes(data)
    return str(path)


def test_gpt_oss_offline_without_the_variable_fails_as_harmony_does(gpt_oss_env):
    proc = serve_gpt_oss(gpt_oss_env)
    assert proc.returncode == 1
    assert HARMONY_OFFLINE in proc.stderr
    assert "openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken" in proc.stderr
    assert "Application startup complete." not in proc.stdout


@pytest.mark.parametrize("contents, error, hint", [
    ({"o200k_base": None}, "No such file or directory (os error 2)", "o200k_base.tiktoken: no such file"),
    ({"cl100k_base": None}, "No such file or directory (os error 2)", "cl100k_base.tiktoken: no such file"),
    ({"o200k_base": b""}, "hash mismatch: computed=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, "
                          "expected=446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d", "is empty"),
    ({"o200k_base": b"AA== 0\nAQ==\n"}, "expected token and rank, could not split on ' ' at line 2", "not a tiktoken"),
    ({"cl100k_base": b"A!== 0\n"}, "failed to decode base64 token at line 1: Invalid symbol 33, offset 1.",
     "not a tiktoken"),
    ({"o200k_base": b"AA== zero\n"}, "failed to parse rank at line 1: invalid digit found in string", "not a tiktoken"),
    ({"o200k_base": b"AA== 0\nAQ== 1\n"}, "hash mismatch: computed=", "neither OpenAI's file nor the lab's fake"),
])
def test_gpt_oss_with_missing_or_bad_encodings_does_not_start(gpt_oss_env, tmp_path, contents, error, hint):
    gpt_oss_env["TIKTOKEN_ENCODINGS_BASE"] = encodings_dir(tmp_path, **contents)
    proc = serve_gpt_oss(gpt_oss_env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert INVALID + error in proc.stderr
    assert hint in proc.stderr
    assert "Application startup complete." not in proc.stdout


def test_gpt_oss_with_the_lab_encodings_serves(gpt_oss_env, tmp_path):
    gpt_oss_env["TIKTOKEN_ENCODINGS_BASE"] = encodings_dir(tmp_path)
    with running_server(gpt_oss_env, [GPT_OSS], tmp_path) as server:
        assert "harmony encodings from %s" % gpt_oss_env["TIKTOKEN_ENCODINGS_BASE"] in server.log()


def test_only_gpt_oss_needs_them_and_the_name_is_case_insensitive(standin_env, tmp_path):
    standin_env.pop("TIKTOKEN_ENCODINGS_BASE", None)
    model = tmp_path / "models" / "GPT-OSS-20B-local"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "gpt_oss", "max_position_embeddings": 8192}')
    proc = serve_gpt_oss(standin_env, str(model))
    assert proc.returncode == 1 and HARMONY_OFFLINE in proc.stderr
    other = tmp_path / "models" / "Qwen3-8B-local"
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "qwen3"}')
    with running_server(standin_env, [str(other)], tmp_path) as server:
        assert "harmony" not in server.log()


# -- the lab instance (docker) ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def memlab(tmp_path_factory):
    if not docker_available():
        pytest.skip("needs root and a running Docker engine")
    root = str(tmp_path_factory.mktemp("spark-lab-mem"))
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX, SPARK_LAB_ROOT=root)
    before = instance_snapshot()
    proc = sh([LAB_SCRIPT, "up", "--singles", "2"], check=False, env=env, timeout=1200)
    try:
        assert proc.returncode == 0, proc.stderr
        yield {"env": env, "root": root, "before": before, "up_log": proc.stderr}
    finally:
        sh([LAB_SCRIPT, "down"], check=False, env=env, timeout=300)


def lab(memlab, *args, check=True):
    return sh([LAB_SCRIPT] + list(args), check=check, env=memlab["env"], timeout=120)


def host_meminfo(memlab, node=CNODE):
    return os.path.join(memlab["root"], node, "meminfo")


def node_meminfo(node=CNODE):
    return dexec(node, "cat", "/proc/meminfo").stdout


def free_m(node=CNODE):
    lines = dexec(node, "free", "-m").stdout.splitlines()
    mem, swap = lines[1].split(), lines[2].split()
    return {"total": int(mem[1]), "used": int(mem[2]), "free": int(mem[3]), "available": int(mem[6]),
            "swap": int(swap[1])}


@pytest.mark.docker
def test_nodes_see_a_spark_meminfo(memlab):
    text = node_meminfo()
    with open(host_meminfo(memlab), encoding="utf-8") as handle:
        assert text == handle.read()               # the host file, bind-mounted at /proc/meminfo
    info = parse_meminfo(text)
    assert info["MemTotal"] == DEFAULT_TOTAL_KB and info["MemAvailable"] == DEFAULT_AVAILABLE_KB
    assert 105 * 1024 * 1024 < info["MemFree"] < info["MemAvailable"]          # about 110 GiB free
    for key in ("Buffers", "Cached", "SwapCached", "Active", "Inactive", "Active(anon)", "Inactive(file)",
                "SwapTotal", "SwapFree", "AnonPages", "Shmem", "Slab", "SReclaimable", "CommitLimit",
                "Committed_AS", "HugePages_Total", "Hugepagesize"):
        assert key in info, key
    assert text.splitlines()[0] == "MemTotal:       125904132 kB"     # the kernel's "%-16s%8lu kB"
    assert "MemAvailable:   117440512 kB" in text
    assert free_m() == {"total": 122953, "used": free_m()["used"], "free": info["MemFree"] // 1024,
                        "available": 114688, "swap": 16383}
    assert node_meminfo(COTHER) == text
    mounts = sh(["docker", "inspect", "-f", "{{range .Mounts}}{{.Source}}={{.Destination}} {{end}}", CNODE]).stdout
    assert "%s=/proc/meminfo" % host_meminfo(memlab) in mounts


@pytest.mark.docker
def test_lab_meminfo_lowers_available_memory_in_place(memlab):
    path = host_meminfo(memlab)
    inode = os.stat(path).st_ino
    default = node_meminfo()
    proc = lab(memlab, "meminfo", NODE, "--available-mib", "2048")
    assert "MemAvailable 2048 MiB" in proc.stderr
    assert os.stat(path).st_ino == inode                              # rewritten in place: same inode
    info = parse_meminfo(node_meminfo())                              # seen by the node at once
    assert info["MemAvailable"] == 2048 * 1024 and info["MemTotal"] == DEFAULT_TOTAL_KB
    assert 1024 * 1024 < info["MemFree"] < info["MemAvailable"]
    assert info["Buffers"] + info["Cached"] < parse_meminfo(default)["Buffers"] + parse_meminfo(default)["Cached"]
    assert free_m()["available"] == 2048 and free_m()["total"] == 122953
    assert node_meminfo(COTHER) == default                            # per node
    # Without options it prints the node's file; the prefixed container name works too.
    assert lab(memlab, "meminfo", CNODE).stdout == node_meminfo()
    lab(memlab, "meminfo", CNODE, "--available-mib=4096")
    assert parse_meminfo(node_meminfo())["MemAvailable"] == 4096 * 1024
    # A machine of 4 GiB with 3 GiB available.
    lab(memlab, "meminfo", NODE, "--total-mib", "4096", "--available-mib", "3072")
    assert free_m()["total"] == 4096 and free_m()["available"] == 3072


@pytest.mark.docker
def test_lab_meminfo_refuses_what_cannot_be(memlab):
    before = node_meminfo()
    for args, message in [((NODE, "--available-mib", "lots"), "--available-mib needs a whole number of MiB"),
                          ((NODE, "--available-mib", "999999"), "does not fit in MemTotal"),
                          ((NODE, "--swap"), "unknown option '--swap'"),
                          (("spark-z",), "no node %sspark-z in lab instance %s" % (PREFIX, PREFIX)),
                          ((), "usage: lab meminfo NODE")]:
        proc = lab(memlab, "meminfo", *args, check=False)
        assert proc.returncode == 1 and message in proc.stderr, (args, proc.stderr)
    assert node_meminfo() == before


@pytest.mark.docker
def test_lab_meminfo_reset_restores_the_default(memlab):
    lab(memlab, "meminfo", NODE, "--available-mib", "1024")
    lab(memlab, "meminfo", NODE, "--reset")
    assert node_meminfo() == node_meminfo(COTHER)
    info = parse_meminfo(node_meminfo())
    assert (info["MemTotal"], info["MemAvailable"]) == (DEFAULT_TOTAL_KB, DEFAULT_AVAILABLE_KB)


@pytest.mark.docker
def test_page_cache_cannot_be_dropped_in_a_node(memlab):
    assert dexec(CNODE, "sh", "-c", "test -w /proc/sys/vm/drop_caches", check=False).returncode != 0
    proc = dexec(CNODE, "sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches", check=False)
    assert proc.returncode != 0 and "Read-only file system" in proc.stderr


@pytest.mark.docker
def test_file_server_serves_the_committed_encodings_to_the_nodes(memlab):
    sums = lab_sums()
    for node in (CNODE, COTHER):
        for name in NAMES:
            url = "http://%s:8080/encodings/%s" % (FILES, name)
            got = dexec(node, "sh", "-c", "curl -sSf %s | sha256sum" % url).stdout.split()[0]
            assert got == sums[name], (node, name)
    listing = dexec(CNODE, "curl", "-sSf", "http://%s:8080/encodings/SHA256SUMS" % FILES).stdout
    assert {line.split()[1]: line.split()[0] for line in listing.splitlines()} == sums
    assert dexec(CNODE, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                 "http://%s:8080/encodings/nope.tiktoken" % FILES, check=False).stdout == "404"
    # Not a node: neither the shape nor the node listings count it; read-only and unprivileged.
    nodes = sh(["docker", "ps", "--filter", "label=spark-lab.instance=" + PREFIX, "--filter", "label=spark-lab.node",
                "--format", "{{.Names}}"]).stdout.split()
    assert sorted(nodes) == [CNODE, COTHER]
    conf = sh(["docker", "inspect", "-f", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.NetworkMode}}",
               FILES]).stdout.split()
    assert conf == ["65534:65534", "true", PREFIX + "spark-lab-mgmt"]
    status = lab(memlab, "status", check=False)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "file server: %s running (http://%s:8080/" % (FILES, FILES) in status.stdout


@pytest.mark.docker
def test_standin_image_fetches_the_encodings_and_serves_gpt_oss(memlab):
    """In the stand-in image, on the lab's network: refused without the encodings, serves with them from the server."""
    script = ("set -e; hf download %s --quiet >/dev/null; "
              "if trtllm-serve %s --port 8311 >/tmp/no.log 2>&1; then echo SERVED-WITHOUT; fi; "
              "grep -h HarmonyError /tmp/no.log; mkdir -p /tmp/enc; "
              "for f in o200k_base cl100k_base; do "
              "curl -sSf -o /tmp/enc/$f.tiktoken http://%s:8080/encodings/$f.tiktoken; done; "
              "TIKTOKEN_ENCODINGS_BASE=/tmp/enc timeout -s INT 3 trtllm-serve %s --port 8311 || true"
              % (GPT_OSS, GPT_OSS, FILES, GPT_OSS))
    started = time.time()
    proc = sh(["docker", "run", "--rm", "--network", PREFIX + "spark-lab-mgmt", "--label",
               "spark-lab.instance=" + PREFIX, "-e", "STANDIN_STARTUP_SECONDS=0", STANDIN_IMAGE, "bash", "-c", script],
              check=False, timeout=120)
    print("stand-in run took %.1fs" % (time.time() - started))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SERVED-WITHOUT" not in proc.stdout
    assert HARMONY_OFFLINE in proc.stdout
    assert "harmony encodings from /tmp/enc" in proc.stdout
    assert "Application startup complete." in proc.stdout


@pytest.mark.docker
def test_up_again_is_a_no_op_and_restarts_a_stopped_file_server(memlab):
    again = lab(memlab, "up")
    assert "nothing to do" in again.stderr
    sh(["docker", "stop", "-t", "1", FILES])
    status = lab(memlab, "status", check=False)
    assert status.returncode == 1 and "file server: %s exited" % FILES in status.stdout
    again = lab(memlab, "up")
    assert "starting the stopped file server" in again.stderr and "nothing to do" not in again.stderr
    url = "http://%s:8080/encodings/SHA256SUMS" % FILES
    assert dexec(CNODE, "curl", "-sSf", "-o", "/dev/null", url).returncode == 0


@pytest.mark.docker
def test_down_removes_the_file_server_and_restores_the_host(memlab):
    proc = lab(memlab, "down")
    assert "removed the file server %s" % FILES in proc.stderr
    assert sh(["docker", "container", "inspect", FILES], check=False).returncode != 0
    assert instance_snapshot() == memlab["before"] == []
    assert not os.path.exists(os.path.join(memlab["root"], CNODE))
