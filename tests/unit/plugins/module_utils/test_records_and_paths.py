"""Unit tests for what the collection may manage (paths) and what the teardown removes (the node's record)."""

import json
import os
import sys

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _paths as paths
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _records as records
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as plan
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_options as trt

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import profile, spark  # noqa: E402  pylint: disable=wrong-import-position

HOME = "/home/spark"


def dirs(models=HOME + "/models", cache=HOME + "/.cache/huggingface", config=HOME + "/.dgx-spark"):
    return [("trtllm_container_models_dir", models), ("trtllm_container_hf_cache_dir", cache),
            ("trtllm_container_config_dir", config)]


@pytest.mark.parametrize("models", ["/", "/etc", "/etc/ssh", "/root", "/usr", "/usr/lib/x", "/var/lib", "/home",
                                    "/proc/1", "/boot", "/var/lib/docker/volumes", "/data"])
def test_system_directories_and_shared_parents_are_refused(models):
    found = paths.problems(dirs(models=models), HOME)
    assert [(v, p) for v, p, dummy in found] == [("trtllm_container_models_dir", models)]
    assert found[0][2].endswith("%s is the system's" % os.path.normpath(models))


@pytest.mark.parametrize("models", ["/data/models", "/srv/models", "/opt/spark/models", "/var/lib/specdec", "/root/m",
                                    "/raid/models", "/home/other/models"])
def test_a_directory_of_its_own_is_accepted(models):
    assert paths.problems(dirs(models=models), HOME) == []


def test_the_home_itself_and_overlaps_are_refused_once_each():
    found = paths.problems(dirs(models=HOME + "/"), HOME)
    assert len(found) == 1 and found[0][2].endswith("/home/spark is the login user's home")
    found = paths.problems(dirs(cache=HOME + "/models/hf"), HOME)
    assert [(v, why.split("; ")[-1]) for v, dummy, why in found] == [
        ("trtllm_container_hf_cache_dir", "it overlaps trtllm_container_models_dir (/home/spark/models)")]
    assert paths.problems(dirs(config=HOME + "/models"), HOME)[0][0] == "trtllm_container_config_dir"


@pytest.mark.parametrize("path,problem", [("/etc/netplan/40-cx7.yaml", False), ("/etc/netplan/99-x.yaml", False),
                                          ("/etc/ssh/sshd_config", True), ("/etc/netplan/sub/x.yaml", True),
                                          ("/etc/netplan/40-cx7.yml", True), ("/etc/netplan/.hidden.yaml", True),
                                          ("/tmp/40-cx7.yaml", True)])
def test_the_netplan_file_is_a_yaml_file_in_etc_netplan(path, problem):
    assert bool(paths.netplan_problem(path)) is problem


def test_the_record_round_trips_root_only(tmp_path):
    path = tmp_path / "state" / "created.json"
    assert records.load(str(path)) == {}
    records.save({"/a": {"kind": "file"}}, str(path))
    assert records.load(str(path)) == {"/a": {"kind": "file"}}
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    path.write_text("[1, 2]")
    assert records.load(str(path)) == {}


def test_the_teardown_plan_removes_what_was_created_and_keeps_the_users(tmp_path):
    config, models = tmp_path / "config", tmp_path / "models"
    (config / "ssh").mkdir(parents=True)
    (config / "ssh" / "id_ed25519").write_text("k")
    (config / "hf_token").write_text("t")
    (config / "tiktoken").mkdir()
    (config / "tiktoken" / "o200k").write_text("e")
    (models / "draft").mkdir(parents=True)
    (models / "draft" / "w").write_text("w")
    (models / "notes.txt").write_text("mine")
    recorded = {str(config): {"kind": "directory"}, str(config / "ssh"): {"kind": "directory"},
                str(config / "ssh" / "id_ed25519"): {"kind": "key"}, str(config / "hf_token"): {"kind": "token"},
                str(config / "tiktoken"): {"kind": "tree"}, str(models): {"kind": "directory"},
                str(models / "draft"): {"kind": "download", "repo": "org/d"}, str(tmp_path / "gone"): {"kind": "file"}}
    remove, keep = records.cleanup_plan(recorded, remove_models=False)
    assert [p for p, dummy in remove] == [str(config / "hf_token"), str(config / "ssh" / "id_ed25519"),
                                          str(config / "tiktoken"), str(config / "ssh"), str(config)]
    assert keep == [(str(models / "draft"), "a download (specdec_teardown_remove_models=true removes it)"),
                    (str(models), "holds 1 entry the collection did not create (e.g. notes.txt)")]
    remove, keep = records.cleanup_plan(recorded, remove_models=True)
    assert (str(models / "draft"), "download") in remove
    assert keep == [(str(models), "holds 1 entry the collection did not create (e.g. notes.txt)")]
    (models / "notes.txt").unlink()
    remove, keep = records.cleanup_plan(recorded, remove_models=False)
    assert keep[-1] == (str(models), "holds what the collection keeps (draft)")


@pytest.mark.parametrize("extra,expected", [
    (["--port", "9000"], "--port is set by the plan (set specdec_serve_port instead)"),
    (["--host=::"], "--host is set by the plan (set specdec_serve_host instead)"),
    (["--config", "/x.yml"], "--config is set by the plan (set specdec_serve_options instead)"),
    (["--backend", "tensorrt"], "--backend is set by the plan; an extra argument would override it"),
])
def test_extra_arguments_may_not_override_planned_flags(extra, expected):
    found = trt.planned_overrides(extra, {}, {"tensor_parallel_size": 1, "pipeline_parallel_size": 1})
    assert found == [("specdec_serve_extra_args", expected + ("" if "override" in expected else
                                                              "; an extra argument would override it"))]


def test_other_extra_arguments_and_equal_options_pass():
    planned = {"tensor_parallel_size": 2, "pipeline_parallel_size": 1}
    assert trt.planned_overrides(["--log_level", "info"], {"tensor_parallel_size": 2}, planned) == []
    assert trt.planned_overrides([], {"pipeline_parallel_size": 2}, planned) == [
        ("specdec_serve_options", "pipeline_parallel_size: 2 would override the plan's 1 (set specdec_serve_pp_size "
                                  "instead)")]


def test_the_cleanup_module_removes_and_reports(tmp_path, capsys):
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.dgx_spark.specdec.plugins.modules import spark_cleanup

    config = tmp_path / "config"
    config.mkdir()
    (config / "hf_token").write_text("t")
    (config / "users.txt").write_text("u")
    record = tmp_path / "created.json"
    records.save({str(config): {"kind": "directory"}, str(config / "hf_token"): {"kind": "token"}}, str(record))

    def run(check):
        with patch_module_args({"record": str(record), "_ansible_check_mode": check}):
            with pytest.raises(SystemExit):
                spark_cleanup.main()
        return json.loads(capsys.readouterr().out)

    result = run(True)
    assert result["changed"] and (config / "hf_token").exists()
    result = run(False)
    assert result["removed"] == [{"path": str(config / "hf_token"), "kind": "token"}]
    why = "holds 1 entry the collection did not create (e.g. users.txt)"
    assert result["kept"] == [{"path": str(config), "why": why}]
    assert (config / "users.txt").exists() and records.load(str(record)) == {str(config): {"kind": "directory"}}
    assert run(False)["changed"] is False


def test_a_draft_directory_that_holds_another_model_is_refused_and_a_new_revision_downloaded():
    fact = spark("spark-a")
    marker = "/home/spark/models/gpt-oss-120b-Eagle3/.dgx-spark-complete"
    fact["downloads"] = {marker: "nvidia/gpt-oss-120b-Eagle3-long-context\n"}
    plans, dummy = plan.plan_cluster("spark-a", ["spark-a"], profile("single_spark_eagle3"), {"spark-a": {}},
                                     {"spark-a": fact})
    draft = plans["spark-a"]["serve"]["downloads"][1]
    assert draft["marker"] == marker and draft["current"]
    plans, dummy = plan.plan_cluster("spark-a", ["spark-a"], profile("single_spark_eagle3"),
                                     {"spark-a": {"specdec_serve_draft_revision": "v1.0"}}, {"spark-a": fact})
    assert not plans["spark-a"]["serve"]["downloads"][1]["current"] and "downloads" in plans["spark-a"]["changes"]
    with pytest.raises(plan.PlanError) as info:
        plan.plan_cluster("spark-a", ["spark-a"], profile("single_spark_eagle3"),
                          {"spark-a": {"specdec_serve_draft_model": "org/other-draft"}}, {"spark-a": fact})
    assert ("specdec_serve_draft_dir on spark-a: /models/gpt-oss-120b-Eagle3/ holds "
            "nvidia/gpt-oss-120b-Eagle3-long-context (its marker %s), and specdec_serve_draft_model is "
            "org/other-draft" % marker) in str(info.value)
