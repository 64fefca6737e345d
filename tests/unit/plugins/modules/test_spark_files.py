# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_files module's main() against a temporary directory: directories, files, absent files, SSH keys."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import spark_files

ME = pwd.getpwuid(os.getuid()).pw_name
UID = os.getuid()
GID = pwd.getpwuid(os.getuid()).pw_gid
SSH_KEYGEN = shutil.which("ssh-keygen")
needs_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen is not installed")


def run_module(capsys, args):
    """Run main() like Ansible does; return (rc, parsed JSON result)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            spark_files.main()
    out = capsys.readouterr().out
    return info.value.code, json.loads(out)


def ok(capsys, args):
    rc, result = run_module(capsys, args)
    assert rc == 0, result
    assert not result.get("failed"), result
    return result


def failed(capsys, args):
    rc, result = run_module(capsys, args)
    assert rc == 1, result
    assert result["failed"] is True
    return result


def mode_of(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def d(path, mode="0755"):
    return {"path": str(path), "owner": ME, "group": ME, "mode": mode}


def f(path, content, mode="0644"):
    return {"path": str(path), "content": content, "owner": ME, "group": ME, "mode": mode}


def leftovers(directory):
    return sorted(name for name in os.listdir(str(directory)) if name.startswith(".spark_files."))


# -- directories and files --------------------------------------------------------------------------------------


def test_creates_directories_parents_first_with_their_modes(capsys, tmp_path):
    top = tmp_path / "cfg"
    ssh = top / "ssh"
    result = ok(capsys, {"directories": [d(top, "0755"), d(ssh, "0700")]})
    assert result["changed"] is True
    assert result["changed_paths"] == [str(top), str(ssh)]
    assert result["public_keys"] == {}
    assert top.is_dir() and ssh.is_dir()
    assert mode_of(top) == 0o755 and mode_of(ssh) == 0o700
    st = os.lstat(str(ssh))
    assert (st.st_uid, st.st_gid) == (UID, GID)
    assert "diff" not in result  # no --diff


def test_directory_mode_is_exact_whatever_the_umask(capsys, tmp_path):
    old = os.umask(0o077)
    try:
        ok(capsys, {"directories": [d(tmp_path / "open", "0775")]})
    finally:
        os.umask(old)
    assert mode_of(tmp_path / "open") == 0o775


def test_writes_files_with_content_and_mode(capsys, tmp_path):
    hostfile = tmp_path / "openmpi-hostfile"
    secret = tmp_path / "hf_token"
    result = ok(capsys, {"files": [f(hostfile, "192.168.200.12 slots=1\n"), f(secret, "hf_abc\n", "0600")]})
    assert result["changed"] is True
    assert result["changed_paths"] == [str(hostfile), str(secret)]
    assert hostfile.read_text() == "192.168.200.12 slots=1\n"
    assert secret.read_text() == "hf_abc\n"
    assert mode_of(hostfile) == 0o644 and mode_of(secret) == 0o600
    st = os.lstat(str(hostfile))
    assert (st.st_uid, st.st_gid) == (UID, GID)
    assert leftovers(tmp_path) == []


def test_default_modes_are_0755_and_0644(capsys, tmp_path):
    directory = tmp_path / "dir"
    path = directory / "file"
    ok(capsys, {"directories": [{"path": str(directory), "owner": ME}],
                "files": [{"path": str(path), "content": "x\n", "owner": ME}]})
    assert mode_of(directory) == 0o755 and mode_of(path) == 0o644


def test_second_call_is_not_changed(capsys, tmp_path):
    args = {"directories": [d(tmp_path / "cfg"), d(tmp_path / "cfg" / "ssh", "0700")],
            "files": [f(tmp_path / "cfg" / "a.yml", "a: 1\n"), f(tmp_path / "cfg" / "ssh" / "config", "Host x\n", "0600")]}
    first = ok(capsys, args)
    assert len(first["changed_paths"]) == 4
    before = {p: os.lstat(p).st_ino for p in (str(tmp_path / "cfg" / "a.yml"), str(tmp_path / "cfg" / "ssh" / "config"))}
    second = ok(capsys, dict(args, _ansible_diff=True))
    assert second["changed"] is False
    assert second["changed_paths"] == []
    assert "diff" not in second
    # Not rewritten either.
    assert {p: os.lstat(p).st_ino for p in before} == before


def test_content_change_replaces_the_file_atomically_with_the_requested_mode(capsys, tmp_path):
    path = tmp_path / "extra-llm-api-config.yml"
    ok(capsys, {"files": [f(path, "max_draft_len: 3\n", "0640")]})
    # A second name for the old file: an atomic replace leaves it untouched, an in-place write would change it.
    old = tmp_path / "old-link"
    os.link(str(path), str(old))
    result = ok(capsys, {"files": [f(path, "max_draft_len: 4\n", "0640")]})
    assert result["changed"] is True and result["changed_paths"] == [str(path)]
    assert path.read_text() == "max_draft_len: 4\n"
    assert old.read_text() == "max_draft_len: 3\n"
    assert os.lstat(str(path)).st_ino != os.lstat(str(old)).st_ino
    assert mode_of(path) == 0o640
    assert leftovers(tmp_path) == []


def test_content_change_applies_a_new_mode_too(capsys, tmp_path):
    path = tmp_path / "f"
    ok(capsys, {"files": [f(path, "one\n", "0644")]})
    ok(capsys, {"files": [f(path, "two\n", "0600")]})
    assert path.read_text() == "two\n" and mode_of(path) == 0o600


def test_mode_only_change_of_a_file_and_a_directory(capsys, tmp_path):
    directory = tmp_path / "ssh"
    path = directory / "config"
    ok(capsys, {"directories": [d(directory, "0755")], "files": [f(path, "Host x\n", "0644")]})
    inode = os.lstat(str(path)).st_ino
    result = ok(capsys, {"directories": [d(directory, "0700")], "files": [f(path, "Host x\n", "0600")]})
    assert result["changed"] is True
    assert result["changed_paths"] == [str(directory), str(path)]
    assert mode_of(directory) == 0o700 and mode_of(path) == 0o600
    assert os.lstat(str(path)).st_ino == inode  # only chmod, not rewritten
    assert path.read_text() == "Host x\n"


def test_a_bad_mode_fails_naming_path_and_mode(capsys, tmp_path):
    result = failed(capsys, {"files": [f(tmp_path / "x", "x", "rw-r--r--")]})
    assert result["msg"] == "%s: mode rw-r--r-- is not an octal string such as 0644" % (tmp_path / "x")
    assert not (tmp_path / "x").exists()


# -- check mode and diff ----------------------------------------------------------------------------------------


def test_check_mode_changes_nothing_but_reports_changed_paths(capsys, tmp_path):
    existing = tmp_path / "existing"
    existing.write_text("old\n")
    os.chmod(str(existing), 0o644)
    gone = tmp_path / "gone"
    gone.write_text("bye\n")
    new_dir = tmp_path / "new"
    new_file = new_dir / "file"
    result = ok(capsys, {
        "_ansible_check_mode": True,
        "directories": [d(new_dir)],
        "files": [f(new_file, "content\n"), f(existing, "new\n", "0600")],
        "absent": [str(gone)],
    })
    assert result["changed"] is True
    assert result["changed_paths"] == [str(new_dir), str(new_file), str(existing), str(gone)]
    assert not new_dir.exists()
    assert existing.read_text() == "old\n" and mode_of(existing) == 0o644
    assert gone.read_text() == "bye\n"
    assert sorted(os.listdir(str(tmp_path))) == ["existing", "gone"]


def test_check_mode_reports_a_mode_only_change_without_making_it(capsys, tmp_path):
    path = tmp_path / "f"
    ok(capsys, {"files": [f(path, "x\n", "0644")]})
    result = ok(capsys, {"_ansible_check_mode": True, "files": [f(path, "x\n", "0600")]})
    assert result["changed"] is True and result["changed_paths"] == [str(path)]
    assert mode_of(path) == 0o644


def test_diff_shows_before_and_after(capsys, tmp_path):
    existing = tmp_path / "hostfile"
    existing.write_text("192.168.200.12 slots=1\n")
    gone = tmp_path / "gone"
    gone.write_text("x")
    new_dir = tmp_path / "d"
    result = ok(capsys, {
        "_ansible_diff": True,
        "directories": [d(new_dir)],
        "files": [f(existing, "192.168.200.12 slots=1\n192.168.200.13 slots=1\n"), f(tmp_path / "new", "fresh\n")],
        "absent": [str(gone)],
    })
    assert result["diff"] == [
        {"before_header": str(new_dir), "after_header": str(new_dir), "before": "(absent)\n", "after": "(directory)\n"},
        {"before_header": str(existing), "after_header": str(existing), "before": "192.168.200.12 slots=1\n",
         "after": "192.168.200.12 slots=1\n192.168.200.13 slots=1\n"},
        {"before_header": str(tmp_path / "new"), "after_header": str(tmp_path / "new"), "before": "",
         "after": "fresh\n"},
        {"before_header": str(gone), "after_header": str(gone), "before": "(present)\n", "after": "(absent)\n"},
    ]


def test_diff_in_check_mode_and_none_without_diff(capsys, tmp_path):
    path = tmp_path / "f"
    result = ok(capsys, {"_ansible_check_mode": True, "_ansible_diff": True, "files": [f(path, "a\n")]})
    assert result["diff"] == [{"before_header": str(path), "after_header": str(path), "before": "", "after": "a\n"}]
    assert not path.exists()
    result = ok(capsys, {"files": [f(path, "a\n")]})
    assert result["changed"] is True and "diff" not in result


# -- absent -----------------------------------------------------------------------------------------------------


def test_absent_removes_only_existing_files(capsys, tmp_path):
    present = tmp_path / "old-hostfile"
    present.write_text("x\n")
    keep = tmp_path / "keep"
    keep.write_text("keep\n")
    missing = tmp_path / "never-there"
    result = ok(capsys, {"absent": [str(present), str(missing)]})
    assert result["changed"] is True
    assert result["changed_paths"] == [str(present)]
    assert not present.exists()
    assert keep.read_text() == "keep\n"
    again = ok(capsys, {"absent": [str(present), str(missing)]})
    assert again["changed"] is False and again["changed_paths"] == []


def test_absent_removes_a_dangling_symlink_not_its_target(capsys, tmp_path):
    link = tmp_path / "link"
    os.symlink(str(tmp_path / "nowhere"), str(link))
    result = ok(capsys, {"absent": [str(link)]})
    assert result["changed_paths"] == [str(link)]
    assert not os.path.lexists(str(link))


# -- SSH keys ---------------------------------------------------------------------------------------------------


@needs_ssh_keygen
def test_ssh_keys_are_generated_once(capsys, tmp_path):
    ssh = tmp_path / "ssh"
    ssh.mkdir(mode=0o700)
    key = str(ssh / "id_ed25519")
    args = {"ssh_keys": [{"path": key, "comment": "dgx-spark-specdec@spark-a"}]}
    first = ok(capsys, args)
    assert first["changed"] is True and first["changed_paths"] == [key]
    public = first["public_keys"][key]
    assert public.startswith("ssh-ed25519 AAAA") and public.endswith(" dgx-spark-specdec@spark-a")
    assert public == open(key + ".pub", encoding="utf-8").read().strip()
    assert mode_of(key) == 0o600
    assert "PRIVATE KEY" in open(key, encoding="utf-8").read()
    private = open(key, "rb").read()
    # The private key never leaves the node.
    assert "PRIVATE KEY" not in json.dumps(first)

    second = ok(capsys, args)
    assert second["changed"] is False and second["changed_paths"] == []
    assert second["public_keys"] == {key: public}
    assert open(key, "rb").read() == private


@needs_ssh_keygen
def test_two_key_pairs_are_distinct(capsys, tmp_path):
    host_key, client_key = str(tmp_path / "ssh_host_ed25519_key"), str(tmp_path / "id_ed25519")
    result = ok(capsys, {"ssh_keys": [{"path": host_key, "comment": "trtllm-multinode@spark-a"},
                                      {"path": client_key, "comment": "dgx-spark-specdec@spark-a"}]})
    assert result["changed_paths"] == [host_key, client_key]
    keys = result["public_keys"]
    assert set(keys) == {host_key, client_key}
    assert keys[host_key].split()[1] != keys[client_key].split()[1]
    assert keys[host_key].endswith("trtllm-multinode@spark-a")


@needs_ssh_keygen
def test_half_present_key_pair_is_regenerated(capsys, tmp_path):
    key = str(tmp_path / "id_ed25519")
    args = {"ssh_keys": [{"path": key, "comment": "c"}]}
    first = ok(capsys, args)
    old_private = open(key, "rb").read()
    os.unlink(key + ".pub")  # only the private key is left
    result = ok(capsys, args)
    assert result["changed"] is True and result["changed_paths"] == [key]
    assert os.path.exists(key + ".pub")
    assert open(key, "rb").read() != old_private
    assert result["public_keys"][key] != first["public_keys"][key]
    assert result["public_keys"][key] == open(key + ".pub", encoding="utf-8").read().strip()
    assert mode_of(key) == 0o600


@needs_ssh_keygen
def test_lone_public_key_is_regenerated(capsys, tmp_path):
    key = str(tmp_path / "id_ed25519")
    with open(key + ".pub", "w", encoding="utf-8") as handle:
        handle.write("ssh-ed25519 AAAAstale stale\n")
    result = ok(capsys, {"ssh_keys": [{"path": key, "comment": "fresh"}]})
    assert result["changed_paths"] == [key]
    assert "AAAAstale" not in result["public_keys"][key] and result["public_keys"][key].endswith(" fresh")
    assert os.path.exists(key)


def test_ssh_keys_in_check_mode_are_not_made(capsys, tmp_path):
    key = str(tmp_path / "id_ed25519")
    result = ok(capsys, {"_ansible_check_mode": True, "ssh_keys": [{"path": key, "comment": "c"}]})
    assert result["changed"] is True and result["changed_paths"] == [key]
    assert result["public_keys"] == {key: ""}
    assert os.listdir(str(tmp_path)) == []


@needs_ssh_keygen
def test_existing_key_is_reported_in_check_mode(capsys, tmp_path):
    key = str(tmp_path / "id_ed25519")
    public = ok(capsys, {"ssh_keys": [{"path": key, "comment": "c"}]})["public_keys"][key]
    result = ok(capsys, {"_ansible_check_mode": True, "ssh_keys": [{"path": key, "comment": "c"}]})
    assert result["changed"] is False and result["public_keys"] == {key: public}


# -- what fails, named ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("option, item, name", [
    ("directories", {"path": "relative/dir", "owner": ME}, "directories"),
    ("files", {"path": "relative/file", "content": "x", "owner": ME}, "files"),
    ("ssh_keys", {"path": "relative/id_ed25519"}, "ssh_keys"),
])
def test_relative_path_fails_with_a_clear_message(capsys, tmp_path, monkeypatch, option, item, name):
    monkeypatch.chdir(tmp_path)
    result = failed(capsys, {option: [item]})
    assert result["msg"] == "%s: %r is not an absolute path" % (name, item["path"])
    assert os.listdir(str(tmp_path)) == []


def test_missing_path_fails(capsys):
    result = failed(capsys, {"files": [{"content": "x", "owner": ME}]})
    assert result["msg"] == "files: None is not an absolute path"


def test_missing_parent_directory_fails(capsys, tmp_path):
    path = tmp_path / "no-such-dir" / "file"
    result = failed(capsys, {"files": [f(path, "x\n")]})
    assert result["msg"] == "%s: the directory %s does not exist" % (path, tmp_path / "no-such-dir")
    assert not (tmp_path / "no-such-dir").exists()


def test_parent_listed_in_directories_is_created_first(capsys, tmp_path):
    path = tmp_path / "made" / "file"
    result = ok(capsys, {"directories": [d(tmp_path / "made")], "files": [f(path, "x\n")]})
    assert result["changed_paths"] == [str(tmp_path / "made"), str(path)]
    assert path.read_text() == "x\n"


def test_unknown_owner_fails_naming_it(capsys, tmp_path):
    path = tmp_path / "f"
    result = failed(capsys, {"files": [{"path": str(path), "content": "x", "owner": "no-such-user-xyz", "mode": "0644"}]})
    assert result["msg"] == "%s: owner no-such-user-xyz does not exist on this node" % path
    assert not path.exists()
    result = failed(capsys, {"directories": [{"path": str(tmp_path / "d"), "owner": "no-such-user-xyz"}]})
    assert "owner no-such-user-xyz does not exist" in result["msg"] and str(tmp_path / "d") in result["msg"]
    assert not (tmp_path / "d").exists()


def test_a_directory_in_place_of_a_file_fails(capsys, tmp_path):
    (tmp_path / "x").mkdir()
    result = failed(capsys, {"files": [f(tmp_path / "x", "y")]})
    assert result["msg"] == "%s is a directory" % (tmp_path / "x")


def test_unknown_option_fails(capsys):
    result = failed(capsys, {"links": []})
    assert "links" in result["msg"] and "Unsupported parameters" in result["msg"]


def test_secret_files_are_written_and_never_shown(capsys, tmp_path):
    token = tmp_path / "hf_token"
    args = {"secret_files": [{"path": str(token), "content": "hf_SecretValue1234", "mode": "0600"}],
            "_ansible_diff": True}
    rc, result = run_module(capsys, args)
    assert rc == 0 and result["changed"] and token.read_text() == "hf_SecretValue1234"
    assert oct(token.stat().st_mode & 0o777) == "0o600"
    assert "hf_SecretValue1234" not in json.dumps(result)
    rc, result = run_module(capsys, args)
    assert rc == 0 and not result["changed"]


def test_exists_reports_paths_without_touching_them(capsys, tmp_path):
    marker = tmp_path / "done"
    marker.write_text("x")
    rc, result = run_module(capsys, {"exists": [str(marker), str(tmp_path / "missing")]})
    assert rc == 0 and not result["changed"]
    assert result["exists"] == {str(marker): True, str(tmp_path / "missing"): False}


def test_check_mode_predicts_a_file_in_a_directory_an_earlier_task_creates(capsys, tmp_path):
    target = tmp_path / "not-yet" / "openmpi-hostfile"
    rc, result = run_module(capsys, {"files": [{"path": str(target), "content": "x\n"}], "_ansible_check_mode": True})
    assert rc == 0 and result["changed"] and result["changed_paths"] == [str(target)]
    assert not target.parent.exists()


# -- the record of what the collection created ------------------------------------------------------------------

def test_what_it_creates_is_recorded_and_an_existing_directory_keeps_its_owner_and_mode(capsys, tmp_path):
    record = tmp_path / "state" / "created.json"
    mine = tmp_path / "shared"
    mine.mkdir(mode=0o750)
    os.chmod(mine, 0o750)
    result = ok(capsys, {"record": str(record),
                         "directories": [d(mine, "0755"), d(tmp_path / "new"), d(tmp_path / "new" / "deeper"),
                                         dict(d(tmp_path / "dl"), record={"kind": "download", "repo": "org/m"})],
                         "files": [f(tmp_path / "new" / "a.conf", "x\n"), dict(f(mine / "marker", "m\n"), kind="none")],
                         "secret_files": [f(tmp_path / "new" / "token", "hf_secret")]})
    # The user's directory: left as it was, and said so.
    assert mode_of(mine) == 0o750 and result["kept"] == [str(mine)]
    paths = json.loads(record.read_text())["paths"]
    assert paths == {str(tmp_path / "new"): {"kind": "directory"}, str(tmp_path / "new" / "deeper"): {"kind": "directory"},
                     str(tmp_path / "dl"): {"kind": "download", "repo": "org/m"},
                     str(tmp_path / "new" / "a.conf"): {"kind": "file"}, str(tmp_path / "new" / "token"): {"kind": "token"}}
    assert mode_of(record) == 0o600 and sorted(result["recorded"]) == sorted(paths)
    # Run again: nothing new to record; a recorded directory gets its mode back.
    os.chmod(tmp_path / "new" / "deeper", 0o700)
    result = ok(capsys, {"record": str(record), "directories": [d(tmp_path / "new" / "deeper")]})
    assert result["recorded"] == [] and mode_of(tmp_path / "new" / "deeper") == 0o755


def test_only_the_secrets_content_is_hidden_and_expect_compares_contents(capsys, tmp_path):
    marker = tmp_path / "marker"
    marker.write_text("org/m\nrevision: v1\n")
    result = ok(capsys, {"secret_files": [f(tmp_path / "token", "hf_OnlyThisIsSecret")],
                         "expect": [{"path": str(marker), "content": "org/m\nrevision: v1\n", "mode": "0644"},
                                    {"path": str(tmp_path / "none"), "content": "org/m\n"}]})
    text = json.dumps(result)
    assert "hf_OnlyThisIsSecret" not in text
    # The path, owner and mode are not masked anywhere in the output.
    assert str(tmp_path / "token") in result["changed_paths"] and "********" not in text
    assert result["matches"] == {str(marker): True, str(tmp_path / "none"): False}
    result = ok(capsys, {"expect": [{"path": str(marker), "content": "org/m\n"}]})
    assert result["matches"] == {str(marker): False}
