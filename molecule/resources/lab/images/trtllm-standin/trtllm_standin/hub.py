"""The lab's stand-in for the Hugging Face hub's access rules (no network): one policy for ``hf download`` and for
the stand-in ``huggingface_hub`` package (``HfApi.whoami``, ``auth_check``, ``model_info``).

The policy is DEFAULT_POLICY, or the JSON file named by STANDIN_HUB_POLICY; the older STANDIN_GATED_REPOS and
STANDIN_MISSING_REPOS globs (comma-separated) replace its gated list and add to its missing list.

  exists     globs of repositories that exist (ids without an organisation exist too)
  missing    globs that do not exist even so
  gated      gated repositories: reading one needs a token with a grant
  private    private repositories: without a grant they look missing, as on the hub
  tokens     {token: [globs of gated or private repositories it may read] | "revoked" | "no-gated"}; a well-formed
             token not listed may read everything (the lab's own token). "no-gated": a fine-grained token without
             read access to public gated repositories (403)
  revisions  {glob: [revisions]} that exist besides "main" (a 40-hex commit always resolves)
  full_disk  globs whose download fills the disk
"""

import fnmatch
import json
import os
import re
import uuid

TOKEN_RE = re.compile(r"^hf_[A-Za-z0-9]{8,}$")
DEFAULT_POLICY = {
    "exists": ["nvidia/*", "meta-llama/*", "openai/*", "Qwen/*", "yuhuili/*", "TinyLlama/*", "deepseek-ai/*",
               "spark-lab/*"],
    "missing": [],
    "gated": ["meta-llama/*", "nvidia/Llama-3.3-70B-Instruct-FP4"],
    "private": ["spark-lab/private-*"],
    "tokens": {
        "hf_LabNoGrants00000000000000000000001": [],
        "hf_LabLlamaOnly0000000000000000000001": ["meta-llama/*"],
        "hf_LabRevoked000000000000000000000001": "revoked",
        "hf_LabFineGrained00000000000000000001": "no-gated",
    },
    "revisions": {"spark-lab/*": ["v1.0"]},
    "full_disk": ["spark-lab/huge-*"],
}


class Refused(Exception):
    """The hub's refusal: HTTP status, its X-Error-Code (None for a plain HTTP error), the library's message."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _globs(name):
    return [g.strip() for g in os.environ.get(name, "").split(",") if g.strip()]


def policy():
    path = os.environ.get("STANDIN_HUB_POLICY")
    data = dict(DEFAULT_POLICY)
    if path:
        with open(path, encoding="utf-8") as handle:
            data.update(json.load(handle))
    if os.environ.get("STANDIN_GATED_REPOS"):
        data["gated"] = _globs("STANDIN_GATED_REPOS")
    data["missing"] = list(data.get("missing") or []) + _globs("STANDIN_MISSING_REPOS")
    return data


def _any(repo_id, globs):
    return any(fnmatch.fnmatchcase(repo_id, g) for g in globs or ())


def request_id():
    return "Root=1-%s" % uuid.uuid4().hex[:24]


def _url(repo_id, revision):
    return "https://huggingface.co/api/models/%s/revision/%s" % (repo_id, revision or "main")


def whoami(token):
    """The account of ``token``, or Refused(401) for a malformed or revoked one."""
    rules = policy()
    if token is None or not TOKEN_RE.match(token) or rules["tokens"].get(token) == "revoked":
        raise Refused(401, None, "401 Client Error: Unauthorized for url: https://huggingface.co/api/whoami-v2 "
                                 "(Request ID: %s)\n\nInvalid credentials in Authorization header" % request_id())
    return {"type": "user", "name": "spark-lab", "auth": {"accessToken": {"role": "read"}}}


def access(repo_id, revision, token):
    """None when ``token`` (None: anonymous) may read ``repo_id`` at ``revision``; else Refused as the hub words it."""
    rules = policy()
    url = _url(repo_id, revision)
    if token is not None:
        whoami(token)
    exists = ("/" not in repo_id or _any(repo_id, rules["exists"])) and not _any(repo_id, rules["missing"])
    grant = rules["tokens"].get(token, ["*"]) if token is not None else []
    hidden = _any(repo_id, rules["private"]) and not (isinstance(grant, list) and _any(repo_id, grant))
    if not exists or hidden:
        raise Refused(401, "RepoNotFound", "401 Client Error. (Request ID: %s)\n\nRepository Not Found for url: %s.\n"
                      "Please make sure you specified the correct `repo_id` and `repo_type`.\nIf you are trying to "
                      "access a private or gated repo, make sure you are authenticated." % (request_id(), url))
    if _any(repo_id, rules["gated"]):
        if grant == "no-gated":
            raise Refused(403, None, "403 Forbidden: Please enable access to public gated repositories in your "
                                     "fine-grained token settings to view this repository.\nCannot access content "
                                     "at: %s." % url)
        if token is None:
            raise Refused(401, "GatedRepo", "401 Client Error. (Request ID: %s)\n\nCannot access gated repo for url "
                          "%s.\nAccess to model %s is restricted. You must have access to it and be authenticated "
                          "to access it. Please log in." % (request_id(), url, repo_id))
        if not _any(repo_id, grant):
            raise Refused(403, "GatedRepo", "403 Client Error. (Request ID: %s)\n\nCannot access gated repo for url "
                          "%s.\nAccess to model %s is restricted and you are not in the authorized list. Visit "
                          "https://huggingface.co/%s to ask for access." % (request_id(), url, repo_id, repo_id))
    revisions = ["main"] + [r for g, rs in (rules.get("revisions") or {}).items() if fnmatch.fnmatchcase(repo_id, g)
                            for r in rs]
    if revision and revision not in revisions and not re.match(r"^[0-9a-f]{40}$", revision):
        raise Refused(404, "RevisionNotFound", "404 Client Error. (Request ID: %s)\n\nRevision Not Found for url: "
                      "%s.\nInvalid rev id: %s" % (request_id(), url, revision))


def flags(repo_id):
    """(private, gated) of ``repo_id`` under the policy, as model_info reports them."""
    rules = policy()
    return _any(repo_id, rules["private"]), _any(repo_id, rules["gated"])


def fills_disk(repo_id):
    return _any(repo_id, policy().get("full_disk"))
