# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Hugging Face Hub access, asked before anything changes, and download failures said plainly.

``PROBE`` is a small program that asks the hub, with ``huggingface_hub``'s own API (``HfApi.whoami``,
``HfApi.auth_check``, ``HfApi.model_info``), whether a token is valid and whether it may read each repository at its
revision. It runs where the download will run: in the release image on the node, on the network the server gets
(``docker run --network <the container's>``, the request on stdin, so the token is in no argv and no ``docker
inspect``), or with the node's own ``huggingface_hub``. ``explain`` turns its answer into one message per problem,
naming the host, the repository, the input that names it and what to do; ``download_failure`` does the same for the
output of a failed ``hf download``.

Pure Python with no third-party imports (``PROBE`` imports ``huggingface_hub`` where it runs).
"""

from __future__ import annotations

import json
import re

# A user access token as https://huggingface.co/settings/tokens gives it: "hf_" and letters and digits.
TOKEN_RE = re.compile(r"^hf_[A-Za-z0-9]{8,}$")
HUB = "https://huggingface.co"

PROBE = r'''
import json
import sys


def _classify(exc):
    """(status, HTTP code or None, first line) of an exception huggingface_hub raised."""
    names = [k.__name__ for k in type(exc).__mro__]
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    if "GatedRepoError" in names:  # a subclass of RepositoryNotFoundError: first
        return "gated", code, line
    if "RevisionNotFoundError" in names:
        return "revision", code, line
    if "RepositoryNotFoundError" in names:
        return "not_found", code, line
    if "DisabledRepoError" in names:
        return "disabled", code, line
    if code == 401:
        return "unauthorized", code, line
    if code == 403:
        return "forbidden", code, line
    if code is None and any(n in names for n in ("ConnectionError", "Timeout", "ConnectTimeout", "ReadTimeout",
                                                   "OSError", "ConnectError", "TimeoutException",
                                                   "OfflineModeIsEnabled")):
        return "network", None, line
    return "error", code, line


def probe(request, hub=None):
    if hub is None:
        try:
            import huggingface_hub as hub
        except ImportError as exc:
            return {"library": None, "error": "huggingface_hub is not importable: %s" % exc}
    token = request.get("token") or False  # False: no token at all, not the environment's or a saved one
    api = hub.HfApi(endpoint=request.get("endpoint") or None)
    out = {"library": getattr(hub, "__version__", "unknown"), "token": "none", "repos": []}
    secret = request.get("token") or None

    def clean(text):
        return text.replace(secret, "<token>") if secret else text

    if token:
        try:
            api.whoami(token=token)
            out["token"] = "valid"
        except Exception as exc:  # pylint: disable=broad-except
            status, code, line = _classify(exc)
            out["token"] = "rejected" if code == 401 else status
            out["token_detail"] = clean(line)
            if code == 401 or status == "network":
                return out  # every repository would say the same
    for repo in request.get("repos") or []:
        entry = {"repo": repo["repo"], "revision": repo.get("revision"), "status": "ok"}
        try:
            if hasattr(api, "auth_check"):
                api.auth_check(repo["repo"], token=token)
            # files_metadata: each file's size, for a download's progress (the sizes the hub lists).
            extra = {"files_metadata": True} if request.get("sizes") else {}
            info = api.model_info(repo["repo"], revision=repo.get("revision"), token=token,
                                  timeout=request.get("timeout") or 30, **extra)
            if extra:
                sizes = [getattr(s, "size", None) for s in getattr(info, "siblings", None) or []]
                entry["size"] = sum(s for s in sizes if s) if sizes and all(s is not None for s in sizes) else None
        except Exception as exc:  # pylint: disable=broad-except
            entry["status"], entry["code"], line = _classify(exc)
            entry["detail"] = clean(line)
        out["repos"].append(entry)
    return out


if __name__ == "__main__":
    print(json.dumps(probe(json.load(sys.stdin))))
'''


def run_probe(request, hub=None):
    """``PROBE`` in this process (the node's own ``huggingface_hub``, or ``hub`` given)."""
    namespace = {"__name__": "dgx_spark_hf_probe"}
    exec(compile(PROBE, "<hf access probe>", "exec"), namespace)  # pylint: disable=exec-used
    return namespace["probe"](request, hub)


def probe_argv(image, network_mode):
    """``docker run`` of ``PROBE`` in the release image, on the network the server gets; the request goes on stdin."""
    argv = ["docker", "run", "--rm", "-i", "--entrypoint", "python3"]
    if network_mode:
        argv += ["--network", network_mode]
    return argv + [image, "-c", PROBE]


def probe_in_image(run_command, docker, image, network_mode, request):
    """``PROBE`` run in the release image on the node -> ``(answer, problem)``.

    ``run_command`` is ``AnsibleModule.run_command``. ``(None, None)``: the node has no such image (or no docker);
    ``(None, (rc, text))``: the probe gave no answer - its exit code and the last lines of its output, the token masked.
    """
    if not docker or not image:
        return None, None
    rc, dummy, dummy = run_command([docker, "image", "inspect", "--format", "{{.Id}}", image], check_rc=False)
    if rc != 0:
        return None, None
    argv = probe_argv(image, network_mode)
    argv[0] = docker
    rc, out, err = run_command(argv, data=json.dumps(request), check_rc=False, binary_data=True)
    try:
        return json.loads(out.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        text = " | ".join((err or out or "no output").strip().splitlines()[-3:])
        secret = request.get("token")
        return None, (rc, text.replace(secret, "<token>") if secret else text)


def token_problem(token):
    """Why ``token`` cannot be a Hugging Face token (never quoting it), or None."""
    if token is None or token == "":
        return None
    if token != token.strip():
        return "it has spaces or a line break around it (copy the token alone)"
    if token.lower().startswith("bearer "):
        return "it starts with 'Bearer ' (give the token alone)"
    if token[:1] in "'\"" or token[-1:] in "'\"":
        return "it has quotes around it"
    if not token.startswith("hf_"):
        return "it does not start with hf_ (a user access token from %s/settings/tokens does)" % HUB
    if not TOKEN_RE.match(token):
        return "it has characters other than letters and digits after hf_, or is too short"
    return None


def _what(repo):
    return "%s (%s)" % (repo["repo"], repo["field"]) if repo.get("field") else repo["repo"]


# What to say of a refused repository: by status and whether a token was given (True, False, or None: not known).
_ADVICE = {
    ("gated", None): "%(what)s is gated and the download had no access to it: request access on %(page)s, and give a "
                     "read token of that account (export HF_TOKEN)",
    ("gated", False): "%(what)s is gated and no Hugging Face token was given: request access on %(page)s, then export "
                      "HF_TOKEN with a read token of that account",
    ("gated", True): "%(what)s is gated and the token's account has no access to it (yet): request access on %(page)s "
                     "(approval can take a while), or use a token of an account that has it",
    ("not_found", None): "%(what)s does not exist, or is private to an account the token (if any) does not belong to: "
                         "check the id on %(page)s",
    ("not_found", False): "%(what)s does not exist, or is private and no token was given: check the id on %(page)s, "
                          "or export HF_TOKEN for an account that can read it",
    ("not_found", True): "%(what)s does not exist, or is private to an account the token does not belong to: check "
                         "the id on %(page)s",
    "forbidden": "the token may not read %(what)s (403): a fine-grained token needs read access to this repository "
                 "(or to public gated repositories) at " + HUB + "/settings/tokens",
    "revision": "%(what)s has no revision %(revision)s: check the branch, tag or commit on %(page)s/tree/main",
    "disabled": "%(what)s is disabled on the hub: pick another repository",
    "network": "could not reach the Hugging Face hub for %(what)s (%(detail)s): check the node's network, DNS and proxy",
}


def explain(result, repos, host, token_given):
    """One message per problem in a ``PROBE`` answer -> list of str (empty: every repository can be read)."""
    by_name = {r["repo"]: r for r in repos}
    if result.get("token") == "rejected":
        return ["%s: the Hugging Face hub rejected the token (401 Invalid credentials): it was revoked or mistyped. "
                "Create a read token at %s/settings/tokens and export HF_TOKEN (or set trtllm_container_hf_token)"
                % (host, HUB)]
    if result.get("token") == "network":
        return ["%s could not reach the Hugging Face hub (%s): check the node's network, DNS and proxy; "
                "a node without network can only serve models it already downloaded"
                % (host, result.get("token_detail"))]
    messages = []
    for entry in result.get("repos") or []:
        status = entry["status"]
        if status == "ok":
            continue
        given = None if token_given is None else bool(token_given)
        advice = _ADVICE.get((status, given)) or _ADVICE.get(status)
        values = {"what": _what(by_name.get(entry["repo"], {"repo": entry["repo"]})),
                  "page": "%s/%s" % (HUB, entry["repo"]), "revision": json.dumps(entry.get("revision")),
                  "detail": entry.get("detail")}
        if advice:
            messages.append(("%s " if status == "network" else "%s: ") % host + advice % values)
        else:
            messages.append("%s: the hub answered %s for %s: %s"
                            % (host, entry.get("code") or "an error", values["what"], entry.get("detail")))
    return messages


# What `hf download` prints when it fails, as huggingface_hub words it, most specific first.
_FAILURES = (
    (("GatedRepoError", "Cannot access gated repo", "Access to model"), "gated"),
    (("RevisionNotFoundError", "Revision Not Found", "Invalid rev id"), "revision"),
    (("RepositoryNotFoundError", "Repository Not Found"), "not_found"),
    (("Invalid credentials", "Invalid user token"), "unauthorized"),
    (("403 Forbidden", "403 Client Error"), "forbidden"),
    (("No space left on device", "Errno 28", "Not enough free disk space"), "disk"),
    (("LocalEntryNotFoundError", "OfflineModeIsEnabled", "outgoing traffic has been disabled"), "offline"),
    (("ConnectionError", "Max retries exceeded", "Name or service not known", "Temporary failure in name resolution",
      "timed out", "Connection refused", "Network is unreachable", "ConnectTimeout", "ReadTimeout"), "network"),
)


def download_failure(output, repo, host, field=None, target=None, token_given=None):
    """A plain message for a failed ``hf download`` of ``repo`` on ``host`` from its output (stdout and stderr).

    ``token_given``: whether the container had a token (None: not known here)."""
    text = output or ""
    kind = next((k for needles, k in _FAILURES if any(n in text for n in needles)), None)
    what = "%s (%s)" % (repo, field) if field else repo
    page = "%s/%s" % (HUB, repo)
    where = " into %s" % target if target else ""
    if kind in ("gated", "not_found", "revision", "forbidden"):
        messages = explain({"token": "none",
                            "repos": [{"repo": repo, "status": kind, "revision": _revision_of(text)}]},
                           [{"repo": repo, "field": field}], host, token_given)
        return "Downloading failed: " + messages[0]
    if kind == "unauthorized":
        return ("Downloading failed: %s: the Hugging Face hub rejected the token for %s (401 Invalid credentials). "
                "Create a read token at %s/settings/tokens and export HF_TOKEN" % (host, what, HUB))
    if kind == "disk":
        return ("Downloading failed: %s: the disk is full while downloading %s%s: free space there (the weights of "
                "the model need room; `df -h` on the node) and run again" % (host, what, where))
    if kind == "offline":
        return ("Downloading failed: %s: %s is not on the node and the hub may not be asked (HF_HUB_OFFLINE): "
                "download it once with network, or unset HF_HUB_OFFLINE" % (host, what))
    if kind == "network":
        return ("Downloading failed: %s could not reach the Hugging Face hub for %s: check the node's network, DNS "
                "and proxy (%s)" % (host, what, _last_line(text)))
    return "Downloading failed: %s: hf download %s ended with: %s (see %s)" % (host, what, _last_line(text), page)


def _revision_of(text):
    match = re.search(r"/revision/([^/\s.]+)", text)
    return match.group(1) if match else None


def _last_line(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"
