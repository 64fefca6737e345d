"""Minimal ``huggingface_hub`` of the DGX Spark lab's stand-in images (not Hugging Face's library).

Only the calls the collection's pre-flight makes (``HfApi.whoami``, ``HfApi.auth_check``, ``HfApi.model_info``),
with the library's signatures and exception classes, answered from the stand-in hub's policy
(/opt/trtllm-standin/trtllm_standin/hub.py) instead of the network.
"""

import os
import sys
import types

if "/opt/trtllm-standin" not in sys.path:
    sys.path.append("/opt/trtllm-standin")

from trtllm_standin import hfcache, hub  # noqa: E402
from trtllm_standin.hf_cli import find_token  # noqa: E402

from . import errors  # noqa: E402

__version__ = "0.35.3"

_RAISE = {"RepoNotFound": errors.RepositoryNotFoundError, "GatedRepo": errors.GatedRepoError,
          "RevisionNotFound": errors.RevisionNotFoundError, None: errors.HfHubHTTPError}


def _offline():
    return os.environ.get("HF_HUB_OFFLINE", "0") in ("1", "true", "True", "ON", "on", "yes")


class HfApi:
    def __init__(self, endpoint=None, token=None, **_kwargs):
        self.endpoint = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
        self.token = token

    def _token(self, token):
        if token is False:
            return None
        if token is None:
            token = self.token
        return token if token else find_token(None)[0]

    def _ask(self, call, *args):
        if _offline():
            raise errors.OfflineModeIsEnabled("Cannot reach %s: offline mode is enabled." % self.endpoint)
        try:
            return call(*args)
        except hub.Refused as exc:
            raise _RAISE[exc.code](exc.message, response=types.SimpleNamespace(status_code=exc.status))

    def whoami(self, token=None):
        token = self._token(token)
        if token is None:
            raise errors.LocalTokenNotFoundError("Token is required (`token=True`), but no token found.")
        return self._ask(hub.whoami, token)

    def auth_check(self, repo_id, *, repo_type=None, token=None):
        if repo_type not in (None, "model"):
            raise ValueError("the lab stand-in only knows model repositories")
        self._ask(hub.access, repo_id, None, self._token(token))

    def model_info(self, repo_id, *, revision=None, timeout=None, token=None, files_metadata=False, **_kwargs):
        token = self._token(token)
        self._ask(hub.access, repo_id, revision, token)
        private, gated = hub.flags(repo_id)
        # Like the library's RepoSibling list: every file, with its size only when files_metadata is asked for.
        siblings = [types.SimpleNamespace(rfilename=name, size=len(data) if files_metadata else None)
                    for name, data in sorted(hfcache.placeholder_files(repo_id).items())]
        return types.SimpleNamespace(id=repo_id, sha=hfcache.commit_for(repo_id, revision or "main"),
                                     private=private, gated="manual" if gated else False, siblings=siblings)


__all__ = ["HfApi", "errors", "__version__"]
