"""Deterministic text and a simple performance model of speculative decoding.

Model (documented in the lab README):
  * Draft length K: speculative_config.max_draft_len (MTP: num_nextn_predict_layers); 0 without
    speculative decoding.
  * Per-position acceptance alpha_k = a0 * d**(k-1) * t, k = 1..K (t = max(0.5, 1 - 0.15*temperature)):
    a draft token is accepted only if all earlier ones were.
  * Expected tokens per target step: E(K) = 1 + sum_{i=1..K} prod_{j<=i} alpha_j.
  * Step cost relative to a plain decoding step: 1 + c*K (c = draft cost per drafted token).
  * tokens/s = base_tps * E(K) / (1 + c*K) / penalties; penalties: CUDA graphs off or batch above
    cuda_graph_config.max_batch_size x1.25, disable_overlap_scheduler x1.05, concurrency
    1 + 0.08*(active requests - 1).
  Defaults (a0, d, c): Eagle/Eagle3 (0.80, 0.85, 0.10) -> optimum K=3 (K=4 close);
  Draft-Target (0.70, 0.85, 0.25) -> optimum K=2; NGram (0.45, 0.80, 0.02); MTP (0.85, 0.80, 0.15).
  Each request draws acceptances from a PRNG seeded by (model, prompt, max_tokens, K, type), so a
  run is reproducible. The text depends only on (model, prompt, max_tokens).

A measured profile replaces that model when STANDIN_SPEC_PROFILE holds one (the lab passes the JSON file
named by SPARK_LAB_SPEC_PROFILE on the host):
  {"acceptance": [a1, a2, ...], "target_step_ms": T, "draft_token_ms": D, "verify_token_ms": V, "seed": S}
  a_k = P(draft token k accepted | tokens 1..k-1 were), 0 beyond the list; one step with draft length d
  takes T + d*D + d*V ms (the plain model: T); acceptances are drawn from a PRNG seeded by S too.
"""

import hashlib
import json
import os
import random
import re

from . import env_float

WORDS = (
    "the of and to in is that it for on with as was at by an be this from are or have not has but "
    "which one all their there can more also when so its into time only other new some could them "
    "model token draft target speculative decoding accepts rejects spark grace blackwell memory "
    "bandwidth latency throughput kernel cache batch request stream engine tensor pipeline parallel "
    "expert layer attention prefill decode step length window sample greedy quality fast steady "
    "paris city river light museum food street evening morning tower garden bridge market cafe art "
    "history music people walk bread wine cheese square station north south old great small many"
).split()

# decoding class -> (a0, decay, draft cost per drafted token)
PROFILES = {
    "eagle": (0.80, 0.85, 0.10),
    "draft_target": (0.70, 0.85, 0.25),
    "ngram": (0.45, 0.80, 0.02),
    "mtp": (0.85, 0.80, 0.15),
    "other": (0.60, 0.80, 0.08),
}

CLASS_OF = {
    "eagle": "eagle", "eagle3": "eagle", "drafttarget": "draft_target", "draft_target": "draft_target",
    "ngram": "ngram", "mtp": "mtp",
}

TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def count_tokens(text):
    return len(TOKEN_RE.findall(text or ""))


def _seed(*parts):
    return int.from_bytes(hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()[:8], "big")


def natural_length(model, prompt, max_tokens):
    """How many tokens the 'model' wants to say before stopping by itself."""
    return 24 + _seed("len", model, prompt, max_tokens) % 400


def generate_words(model, prompt, max_tokens):
    """(list of words, finish_reason): deterministic in (model, prompt, max_tokens)."""
    rng = random.Random(_seed("text", model, prompt, max_tokens))
    natural = natural_length(model, prompt, max_tokens)
    count = min(max_tokens, natural)
    words = []
    sentence_start = True
    for i in range(count):
        word = rng.choice(WORDS)
        if sentence_start:
            word = word.capitalize()
            sentence_start = False
        if i == count - 1 and count == natural:
            word += "."
        elif rng.random() < 0.08:
            word += rng.choice((".", ",", ","))
            sentence_start = word.endswith(".")
        words.append(word)
    return words, ("length" if count < natural else "stop")


def render(words):
    return (" " + " ".join(words)) if words else ""


def measured_profile():
    """The profile of STANDIN_SPEC_PROFILE (JSON), checked; None when unset."""
    text = os.environ.get("STANDIN_SPEC_PROFILE", "").strip()
    if not text:
        return None
    data = json.loads(text)
    acceptance = [float(a) for a in data["acceptance"]]
    if not all(0.0 <= a <= 1.0 for a in acceptance):
        raise ValueError("STANDIN_SPEC_PROFILE: acceptance values must be between 0 and 1: %r" % acceptance)
    times = [float(data[k]) for k in ("target_step_ms", "draft_token_ms", "verify_token_ms")]
    if times[0] <= 0 or min(times) < 0:
        raise ValueError("STANDIN_SPEC_PROFILE: target_step_ms must be > 0 and the other times >= 0")
    return {"acceptance": acceptance, "target_step_ms": times[0], "draft_token_ms": times[1],
            "verify_token_ms": times[2], "seed": data.get("seed", 0)}


class SpecProfile:
    """Speculative-decoding parameters of a server, from the normalized options."""

    def __init__(self, spec_config):
        self.measured = measured_profile()
        self.enabled = bool(spec_config)
        self.decoding_type = None
        self.klass = None
        self.draft_len = 0
        if not self.enabled:
            self.a0 = self.decay = self.cost = 0.0
            return
        self.decoding_type = str(spec_config.get("decoding_type"))
        self.klass = CLASS_OF.get(self.decoding_type.lower(), "other")
        a0, decay, cost = PROFILES[self.klass]
        self.a0 = env_float("STANDIN_ACCEPTANCE", a0)
        self.decay = env_float("STANDIN_ACCEPTANCE_DECAY", decay)
        self.cost = env_float("STANDIN_DRAFT_COST", cost)
        if self.klass == "mtp":
            draft_len = spec_config.get("num_nextn_predict_layers") or spec_config.get("max_draft_len") or 1
        else:
            draft_len = spec_config.get("max_draft_len") or 0
        self.draft_len = int(draft_len) if isinstance(draft_len, (int, float)) else 0

    def alphas(self, temperature=0.0):
        if self.measured:
            listed = self.measured["acceptance"]
            return [listed[k] if k < len(listed) else 0.0 for k in range(self.draft_len)]
        scale = max(0.5, 1.0 - 0.15 * float(temperature or 0.0))
        return [min(1.0, self.a0 * self.decay ** (k - 1) * scale) for k in range(1, self.draft_len + 1)]

    def expected_tokens_per_step(self, temperature=0.0):
        total, prod = 1.0, 1.0
        for alpha in self.alphas(temperature):
            prod *= alpha
            total += prod
        return total

    def step_cost(self):
        return 1.0 + self.cost * self.draft_len

    def step_ms(self):
        """One decoding step of a measured profile, in ms: T + d*D + d*V (None without one)."""
        if not self.measured:
            return None
        per_token = self.measured["draft_token_ms"] + self.measured["verify_token_ms"]
        return self.measured["target_step_ms"] + self.draft_len * per_token

    def speedup(self, temperature=0.0):
        return self.expected_tokens_per_step(temperature) / self.step_cost()


def simulate_steps(profile, model, prompt, max_tokens, n_tokens, temperature=0.0):
    """List of (tokens produced, draft tokens, accepted draft tokens) per target step."""
    rng = random.Random(_seed("accept", model, prompt, max_tokens, profile.draft_len, profile.decoding_type,
                              profile.measured["seed"] if profile.measured else ""))
    alphas = profile.alphas(temperature) if profile.enabled else []
    steps = []
    produced = 0
    while produced < n_tokens:
        accepted = 0
        for alpha in alphas:
            if rng.random() < alpha:
                accepted += 1
            else:
                break
        tokens = min(accepted + 1, n_tokens - produced)
        steps.append((tokens, len(alphas), tokens - 1))
        produced += tokens
    return steps
