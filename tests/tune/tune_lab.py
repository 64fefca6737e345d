"""Run playbooks/tune_draft_len.yml on a lab instance of its own with a speculative-decoding profile.

Shared by tests/tune (CI) and scripts/bench.sh (figures): the tuner against a full sweep on held-out profiles.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(REPO, "molecule", "resources", "lab", "lab")
PREFIX = "tunetest-"

# Profiles the tuner was never written against (the unit tests use others).
PROFILES = {
    "long-draft": {"acceptance": [0.93, 0.9, 0.88, 0.86, 0.82, 0.78, 0.74, 0.7], "target_step_ms": 7.0,
                   "draft_token_ms": 0.3, "verify_token_ms": 0.4, "seed": 11},
    "short-draft": {"acceptance": [0.72, 0.45, 0.25, 0.1], "target_step_ms": 7.0, "draft_token_ms": 1.6,
                    "verify_token_ms": 1.0, "seed": 12},
    "loses": {"acceptance": [0.3, 0.1], "target_step_ms": 6.0, "draft_token_ms": 4.0, "verify_token_ms": 3.0,
              "seed": 13},
}
# Four prompts keep a setting to a few seconds on the lab (the shipped set is for real Sparks); 256 tokens each,
# because a shorter run is too noisy to tell settings 5 % apart.
EXTRA = {"specdec_tune_max_tokens": 256,
         "specdec_bench_prompts": ["Write a haiku about rivers.", "Explain a hash map to a child.",
                                   "List five uses of a paperclip.", "Describe a sunrise over a harbour."]}


def env(profile_path):
    out = dict(os.environ, SPARK_LAB_PREFIX=PREFIX, SPARK_LAB_SPEC_PROFILE=profile_path,
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))
    out["PATH"] = os.path.dirname(sys.executable) + os.pathsep + out.get("PATH", "")
    return out


def lab(*args):
    subprocess.run([LAB] + list(args), check=True, env=dict(os.environ, SPARK_LAB_PREFIX=PREFIX),
                   stdout=subprocess.DEVNULL)


def playbook(profile_path, results_dir, *extra):
    """Run the tuner; returns (rc, seconds, PLAY RECAP line of spark-a, output)."""
    args = ["ansible-playbook", "-i", os.path.join(REPO, "inventories", "lab"),
            os.path.join(REPO, "playbooks", "tune_draft_len.yml"), "-e", json.dumps(EXTRA),
            "-e", "specdec_tune_results_dir=%s" % results_dir] + list(extra)
    start = time.monotonic()
    proc = subprocess.run(args, env=env(profile_path), capture_output=True, text=True, check=False)
    recap = [line for line in proc.stdout.splitlines() if line.startswith("spark-a ")]
    return proc.returncode, time.monotonic() - start, (recap[-1] if recap else ""), proc.stdout + proc.stderr


def evaluate(name, workdir):
    """Tune and sweep one profile: the tuner's restarts and its choice's share of the sweep's best."""
    profile_path = os.path.join(workdir, name + ".json")
    with open(profile_path, "w", encoding="utf-8") as handle:
        json.dump(PROFILES[name], handle)
    figures = {"profile": name}
    for mode in ("tune", "sweep"):
        results = os.path.join(workdir, name + "-" + mode)
        rc, seconds, recap, output = playbook(profile_path, results, "-e", "specdec_tune_mode=" + mode)
        if rc:
            raise AssertionError("tune_draft_len.yml (%s, %s) failed:\n%s" % (name, mode, output[-4000:]))
        with open(os.path.join(results, "tune.json"), encoding="utf-8") as handle:
            figures[mode] = dict(json.load(handle), seconds=round(seconds, 1), results_dir=results)
    sweep = {s["max_draft_len"]: s["tokens_per_s"] for s in figures["sweep"]["settings"]}
    best = max(sweep.values())
    chosen = figures["tune"]["chosen_max_draft_len"]
    figures.update(
        tuner_restarts=figures["tune"]["restarts"], sweep_restarts=figures["sweep"]["restarts"],
        tuner_choice=chosen, sweep_choice=figures["sweep"]["chosen_max_draft_len"],
        # Measured in the sweep, so both sides come from the same runs of the server.
        share_of_best=round((sweep[chosen] / best) if chosen is not None else
                            figures["sweep"]["baseline_tokens_per_s"] / max(best, figures["sweep"]["baseline_tokens_per_s"]), 4),
        tuner_seconds=figures["tune"]["seconds"], sweep_seconds=figures["sweep"]["seconds"])
    return figures


def main(names):
    """`python tests/tune/tune_lab.py long-draft short-draft loses`: figures as JSON (scripts/bench.sh)."""
    lab("up")
    try:
        with tempfile.TemporaryDirectory() as workdir:
            rows = [evaluate(name, workdir) for name in names]
    finally:
        lab("down")
    keep = ("profile", "tuner_restarts", "sweep_restarts", "tuner_choice", "sweep_choice", "share_of_best",
            "tuner_seconds", "sweep_seconds")
    print(json.dumps([{k: row[k] for k in keep} for row in rows], indent=1))


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(PROFILES))
