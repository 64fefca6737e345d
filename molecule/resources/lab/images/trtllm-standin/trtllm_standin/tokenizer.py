"""The ``transformers`` shim's tokenizer: ``AutoTokenizer.from_pretrained`` on the stand-in's HF cache.

The release images ship transformers; clients count the tokens of generated text with the model's own
tokenizer (``AutoTokenizer.from_pretrained(model).encode(text, add_special_tokens=False)``). Here the "model"
is a placeholder checkpoint (hf_cli.py), so a token is what the stand-in's generator counts as one
(``sim.count_tokens``: a word or a punctuation mark), and the counts agree with the generated text.

The model is resolved like trtllm-serve resolves it (serve.resolve_model): a local directory, else an HF id
in the hub cache. A missing id is "downloaded" into the cache as ``hf download`` would (gating and token
rules included), unless HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE is set: then it is an OSError worded like
transformers'.
"""

import hashlib
import os

from . import hf_hub_cache, hfcache, sim

_OFFLINE_VALUES = ("1", "true", "yes", "on")
BOS_TOKEN_ID = 1
EOS_TOKEN_ID = 2


def _offline():
    return any(os.environ.get(name, "").strip().lower() in _OFFLINE_VALUES
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _fetch(repo_id, cache_dir):
    """Fill the hub cache with the placeholder checkpoint of repo_id (the lab's hub); OSError when refused."""
    from . import hf_cli  # pylint: disable=import-outside-toplevel

    try:
        hf_cli.check_access(repo_id, "main", hf_cli.find_token(None)[0])
    except hf_cli.HubError as exc:
        raise OSError("You are trying to access a gated or missing repo %s through the lab's hub:\n%s"
                      % (repo_id, exc)) from None
    commit = hfcache.commit_for(repo_id, "main")
    for name, data in hfcache.placeholder_files(repo_id).items():
        hfcache.write_cache_file(cache_dir, repo_id, commit, "main", name, data)
    return hfcache.cached_snapshot(repo_id, cache_dir=cache_dir)


def resolve(name_or_path, cache_dir=None, local_files_only=False):
    """Directory of the tokenizer's model: a local path or a cached (or fetched) HF id; OSError otherwise."""
    name = str(name_or_path)
    cache_dir = cache_dir or hf_hub_cache()
    if hfcache.looks_like_path(name):
        path = os.path.expanduser(name)
        names = ("tokenizer.json", "tokenizer_config.json", "config.json")
        if any(os.path.isfile(os.path.join(path, f)) for f in names):
            return os.path.abspath(path)
        raise OSError("Can't load tokenizer for '%s'. If you were trying to load it from "
                      "'https://huggingface.co/models', make sure you don't have a local directory with the same "
                      "name. Otherwise, make sure '%s' is the correct path to a directory containing all relevant "
                      "files for a PreTrainedTokenizerFast tokenizer." % (name, name))
    if not hfcache.valid_repo_id(name):
        raise OSError("Incorrect path_or_model_id: '%s'. Please provide either the path to a local folder or the "
                      "repo_id of a model on the Hub." % name)
    path = hfcache.cached_snapshot(name, cache_dir=cache_dir)
    if path:
        return path
    if _offline() or local_files_only:
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in "
                      "the cached files.\nCheck your internet connection or see how to run the library in offline "
                      "mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'. "
                      "(lab stand-in: '%s' is not in %s; download it first, e.g. `hf download %s`)"
                      % (name, cache_dir, name))
    return _fetch(name, cache_dir)


class StandinTokenizer:
    """A fast tokenizer's interface, as far as token counting needs it: one id per ``sim.count_tokens`` token."""

    bos_token_id = BOS_TOKEN_ID
    eos_token_id = EOS_TOKEN_ID

    def __init__(self, name_or_path, path):
        self.name_or_path = str(name_or_path)
        self.path = path
        config = hfcache.model_config(path)
        self.vocab_size = int(config.get("vocab_size") or 32000)

    def tokenize(self, text):
        return sim.TOKEN_RE.findall(text or "")

    def _id(self, token):
        # Stable ids above the special tokens (0 pad/unk, 1 bos, 2 eos).
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        return 3 + int.from_bytes(digest[:4], "big") % max(1, self.vocab_size - 3)

    def encode(self, text, add_special_tokens=True, **_kwargs):
        ids = [self._id(token) for token in self.tokenize(text)]
        return ([self.bos_token_id] + ids) if add_special_tokens else ids

    def __repr__(self):
        return "StandinTokenizer(name_or_path=%r, vocab_size=%d)" % (self.name_or_path, self.vocab_size)


class AutoTokenizer:
    """``AutoTokenizer.from_pretrained(name_or_path, **kwargs)``: cache_dir and local_files_only are honoured,
    the other keyword arguments ignored."""

    def __init__(self):
        raise EnvironmentError("AutoTokenizer is designed to be instantiated using the "
                               "`AutoTokenizer.from_pretrained(pretrained_model_name_or_path)` method.")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *_args, **kwargs):
        path = resolve(pretrained_model_name_or_path, cache_dir=kwargs.get("cache_dir"),
                       local_files_only=bool(kwargs.get("local_files_only")))
        return StandinTokenizer(pretrained_model_name_or_path, path)
