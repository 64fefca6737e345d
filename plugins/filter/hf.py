# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The hf_download_failure filter: a failed ``hf download``, said plainly (host, repository, cause, what to do)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _hf_access


def hf_download_failure(job, host):
    """``job``: one result of the download's async_status loop (its ``item.item`` is the planned download)."""
    item = job.get("item") if isinstance(job, dict) else None
    download = item.get("item") if isinstance(item, dict) else None
    if not isinstance(download, dict) or "repo" not in download:
        raise AnsibleFilterError("hf_download_failure: not a result of the download's async_status loop (no "
                                 "item.item.repo)")
    if not job.get("finished"):
        return ("Downloading failed: %s: %s (%s) did not finish within specdec_serve_download_timeout; a slow link "
                "needs a longer one (the download goes on where it stopped on the next run)"
                % (host, download["repo"], download.get("field") or "a model"))
    output = "\n".join(str(job.get(key) or "") for key in ("stdout", "stderr", "msg"))
    return _hf_access.download_failure(output, download["repo"], host, download.get("field"),
                                       download.get("host_dir") or download.get("local_dir") or None)


class FilterModule:
    def filters(self):
        return {"hf_download_failure": hf_download_failure}
