"""Hugging Face access, asked with the real huggingface_hub against a stand-in hub (HTTP on loopback).

The stand-in answers as huggingface.co does for these calls: the status code and the X-Error-Code /
X-Error-Message headers huggingface_hub's hf_raise_for_status reads (utils/_http.py), so the exceptions the probe
classifies are the library's own.
"""

import http.server
import json
import re
import threading

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _hf_access as hfa

hub = pytest.importorskip("huggingface_hub")

GOOD = "hf_GoodToken0000000000000000000000000"
NO_GRANTS = "hf_NoGrants000000000000000000000000"
REVOKED = "hf_Revoked0000000000000000000000000"
REPOS = {"meta-llama/Llama-3.1-8B-Instruct": "gated", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": "public",
         "acme/private-draft": "private"}


class Hub(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def answer(self, code, body=None, error=None, message=None):
        data = json.dumps(body if body is not None else {"error": message or "error"}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if error:
            self.send_header("X-Error-Code", error)
        if message:
            self.send_header("X-Error-Message", message)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        token = (self.headers.get("Authorization") or "").replace("Bearer ", "") or None
        if token == REVOKED:
            return self.answer(401, message="Invalid credentials in Authorization header")
        if self.path == "/api/whoami-v2":
            return self.answer(200, {"name": "owner", "type": "user"}) if token else self.answer(401)
        match = re.match(r"^/api/models/([^/]+/[^/]+)(/auth-check|/revision/([^/?]+))?", self.path)
        if not match:
            return self.answer(404)
        repo, what, revision = match.groups()
        kind = REPOS.get(repo)
        allowed = token == GOOD
        if kind is None or (kind == "private" and not allowed):
            return self.answer(401, error="RepoNotFound", message="Repository not found")
        if what == "/auth-check":
            if kind == "gated" and not allowed:
                return self.answer(403 if token else 401, error="GatedRepo",
                                   message="Access to model %s is restricted" % repo)
            return self.answer(200, {})
        if revision not in (None, "main"):
            return self.answer(404, error="RevisionNotFound", message="Invalid rev id: %s" % revision)
        return self.answer(200, {"id": repo, "sha": "0" * 40, "private": kind == "private",
                                 "gated": "manual" if kind == "gated" else False})


@pytest.fixture(name="endpoint")
def fixture_endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_port, server.seen
    server.shutdown()


def ask(endpoint, token, *repos):
    return hfa.run_probe({"repos": [{"repo": r, "revision": v} for r, v in repos], "token": token,
                          "endpoint": endpoint[0], "timeout": 5})


def test_a_good_token_reads_everything(endpoint):
    out = ask(endpoint, GOOD, ("meta-llama/Llama-3.1-8B-Instruct", None), ("acme/private-draft", "main"))
    assert out["library"] == hub.__version__ and out["token"] == "valid"
    assert [r["status"] for r in out["repos"]] == ["ok", "ok"]


def test_each_refusal_is_classified_from_the_librarys_own_exceptions(endpoint):
    out = ask(endpoint, NO_GRANTS, ("meta-llama/Llama-3.1-8B-Instruct", None), ("acme/private-draft", None),
              ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "no-such-branch"), ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8BB", None))
    assert [r["status"] for r in out["repos"]] == ["gated", "not_found", "revision", "not_found"]
    messages = hfa.explain(out, [{"repo": "meta-llama/Llama-3.1-8B-Instruct", "field": "specdec_serve_model"},
                                 {"repo": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "field": "specdec_serve_draft_model"}],
                           "spark-a", True)
    assert len(messages) == 4 and all(m.startswith("spark-a") for m in messages)
    assert "meta-llama/Llama-3.1-8B-Instruct (specdec_serve_model) is gated and the token's account has no access" \
        in messages[0] and "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct" in messages[0]
    assert "private to an account the token does not belong to" in messages[1]
    assert 'has no revision "no-such-branch"' in messages[2]
    assert "check the id on https://huggingface.co/yuhuili/EAGLE3-LLaMA3.1-Instruct-8BB" in messages[3]


def test_without_a_token_none_is_sent_and_the_message_says_to_export_one(endpoint):
    out = ask(endpoint, None, ("meta-llama/Llama-3.1-8B-Instruct", None))
    assert out["token"] == "none" and out["repos"][0]["status"] == "gated"
    assert all(auth is None for dummy, auth in endpoint[1])  # not the environment's, not a saved one
    message = hfa.explain(out, [], "spark-a", False)[0]
    assert "no Hugging Face token was given: request access on" in message and "export HF_TOKEN" in message


def test_a_revoked_token_stops_at_whoami_and_never_shows(endpoint):
    out = ask(endpoint, REVOKED, ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", None))
    assert out["token"] == "rejected" and out["repos"] == []
    message = hfa.explain(out, [], "spark-b", True)[0]
    assert "spark-b: the Hugging Face hub rejected the token" in message
    assert REVOKED not in json.dumps(out) + message


def test_an_unreachable_hub_is_a_network_problem():
    out = hfa.run_probe({"repos": [{"repo": "a/b", "revision": None}], "token": GOOD,
                         "endpoint": "http://127.0.0.1:9", "timeout": 2})
    assert out["token"] == "network"
    assert "could not reach the Hugging Face hub" in hfa.explain(out, [], "spark-a", True)[0]


def test_the_token_goes_on_stdin_never_in_argv():
    argv = hfa.probe_argv("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24", "container:spark-a")
    assert argv[:6] == ["docker", "run", "--rm", "-i", "--entrypoint", "python3"]
    assert argv[6:9] == ["--network", "container:spark-a", "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24"]
    assert argv[9] == "-c" and "json.load(sys.stdin)" in argv[10] and "hf_" not in argv[10]


@pytest.mark.parametrize("token,problem", [
    (GOOD, None), (None, None), ("", None),
    (GOOD + "\n", "spaces or a line break"), ("Bearer " + GOOD, "Bearer"), ('"%s"' % GOOD, "quotes"),
    ("api_org_0123456789", "does not start with hf_"), ("hf_abc-def$gh", "other than letters and digits"),
])
def test_token_format(token, problem):
    got = hfa.token_problem(token)
    assert (got is None) if problem is None else (problem in got)
    assert token is None or not token.strip() or token.strip('"').replace("Bearer ", "").strip() not in (got or "")


@pytest.mark.parametrize("output,expected", [
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error.\n\nCannot access gated repo for url x.",
     "is gated and no Hugging Face token was given"),
    ("huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error.\n\nRepository Not Found for url: x.",
     "does not exist, or is private"),
    ("huggingface_hub.errors.RevisionNotFoundError: 404 Client Error.\n\nRevision Not Found for url: "
     "https://huggingface.co/api/models/a/b/revision/v9.", 'has no revision "v9"'),
    ("huggingface_hub.errors.HfHubHTTPError: 401 Client Error: Unauthorized (Invalid credentials in Authorization "
     "header)", "rejected the token"),
    ("OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/hub/x'", "the disk is full"),
    ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
     "exceeded", "could not reach the Hugging Face hub"),
    ("something else entirely\nTraceback ...\nValueError: odd", "ended with: ValueError: odd"),
])
def test_download_failures_are_said_plainly(output, expected):
    message = hfa.download_failure(output, "meta-llama/Llama-3.1-8B-Instruct", "spark-a", "specdec_serve_model",
                                   "/root/.cache/huggingface", token_given=False)
    assert message.startswith("Downloading failed: spark-a") and expected in message
    assert "meta-llama/Llama-3.1-8B-Instruct" in message and "Unknown error" not in message
