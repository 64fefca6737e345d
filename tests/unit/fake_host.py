# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The command side of the fake nodes of the module tests: one contract check for every module that runs commands."""

from __future__ import annotations

from ansible.module_utils import basic


class FakeHost:
    """get_bin_path answers from ``bins``; run_command checks the modules' contract (argv lists, no shell, and
    unless ``plain_env`` check_rc=False with LC_ALL=C), records the call (``record``) and returns ``answer(args)``."""

    plain_env = False

    def get_bin_path(self, module, arg, required=False, opt_dirs=None):
        path = self.bins.get(arg)
        if path is None and required:
            module.fail_json(msg="Failed to find required executable \"%s\" in paths" % arg)
        return path

    def run_command(self, module, args, **kwargs):
        assert isinstance(args, list), "commands must be argv lists (no shell): %r" % (args,)
        assert not kwargs.get("use_unsafe_shell")
        if not self.plain_env:
            assert kwargs.get("check_rc") is False and kwargs.get("environ_update") == {"LC_ALL": "C"}
        self.record(args, kwargs)
        return self.answer(args)

    def record(self, args, kwargs):
        self.calls.append(list(args))

    def answer(self, args):
        raise NotImplementedError

    def install(self, monkeypatch):
        """Stand in for AnsibleModule's get_bin_path and run_command (patched on the class: the module comes first)."""
        fake = self

        def get_bin_path(module, arg, required=False, opt_dirs=None):
            return fake.get_bin_path(module, arg, required, opt_dirs)

        def run_command(module, args, **kwargs):
            return fake.run_command(module, args, **kwargs)

        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
