# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a real Spark needs that the plan's formats do not show: memory, encodings, links, images.

Pure functions, standard library only, used by the plan (``_specdec_plan``):

* ``memory_spec``: what ``spark_memory`` checks before anything changes and does before the server starts
  (the weights' host paths, the headroom, the page-cache drop and the load-time guard);
* ``encodings_spec``: the tiktoken encodings gpt-oss needs, fetched once with their checksums;
* ``pair_links`` and ``mtu_errors``: both ends of each QSFP link, for ``spark_link`` after netplan and for the
  pre-flight, which stops when the MTU differs between the ends and netplan would not make them equal;
* ``image_report`` and ``image_drift``: which image a node runs (ID, digest, the TensorRT-LLM release it reports)
  and whether its tag points elsewhere than when the container was last created.
"""

import ipaddress
import re

GIB = 1024 ** 3

# OpenAI's published encodings (tiktoken_ext/openai_public.py gives the same SHA-256), as NVIDIA's DGX Spark
# speculative-decoding playbook fetches them for gpt-oss.
TIKTOKEN_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings"
TIKTOKEN_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
TIKTOKEN_DIR = "tiktoken"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ENCODING = re.compile(r"^[a-z0-9_]{1,64}$")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/-]*)?$")


def memory_spec(check, headroom_gib, weights, share, estimate_gib, drop_caches, guard, guard_below_gib,
                guard_timeout, ready_url, what):
    """The ``spark_memory`` parameters of one node (sizes in bytes)."""
    return {
        "check": check,
        "headroom_bytes": int(headroom_gib * GIB),
        "weights": list(weights),
        "weights_share": share,
        "estimate_bytes": None if estimate_gib is None else int(estimate_gib * GIB),
        "drop_caches": bool(drop_caches),
        "guard": bool(guard),
        "guard_below_bytes": int(guard_below_gib * GIB),
        "guard_timeout": int(guard_timeout),
        "ready_url": ready_url,
        "names": {"headroom": "specdec_serve_memory_headroom_gib", "check": "specdec_serve_memory_check",
                  "estimate": "specdec_serve_weights_gib", "weights": what},
    }


def encodings_errors(base_url, checksums):
    """Format errors of the encodings' source (field, value, what is accepted), as (field, value, accepted)."""
    errors = []
    if not isinstance(base_url, str) or not _URL.match(base_url):
        errors.append(("specdec_serve_tiktoken_base_url", base_url, "an http(s) URL of the directory that holds "
                       "<name>.tiktoken"))
    if not isinstance(checksums, dict) or not checksums:
        errors.append(("specdec_serve_tiktoken_sha256", checksums, "a mapping of encoding name to its SHA-256"))
        return errors
    for name, digest in checksums.items():
        if not _ENCODING.match(str(name)) or not _SHA256.match(str(digest).lower()):
            errors.append(("specdec_serve_tiktoken_sha256.%s" % name, digest,
                           "an encoding name ([a-z0-9_]) with a SHA-256 of 64 hex digits"))
    return errors


def encodings_spec(config_dir, mount, base_url, checksums):
    """Where the encodings go on the node and in the container, and what ``get_url`` fetches."""
    host_dir = "%s/%s" % (config_dir, TIKTOKEN_DIR)
    return {
        "dir": host_dir,
        "env": {"TIKTOKEN_ENCODINGS_BASE": "%s/%s" % (mount, TIKTOKEN_DIR)},
        "files": [{"url": "%s/%s.tiktoken" % (base_url.rstrip("/"), name),
                   "dest": "%s/%s.tiktoken" % (host_dir, name),
                   "checksum": "sha256:%s" % str(checksums[name]).lower()} for name in sorted(checksums)],
    }


def pair_links(entries):
    """Both ends of each QSFP link: ``entries`` {host: [{iface, cidr}]} -> {host: [link, ...]}.

    Two entries are the ends of one link when their addresses share a network. Each entry gets one end per
    other node in its network: on a direct pair or a ring that is the Spark at the other end of the cable, on a
    switch every other Spark. Of a peer's ends in that network, the one on the same netdev is preferred (one cable
    joins the same port of two Sparks; a switch has every Spark on the same port). Entries without an address are
    skipped.
    """
    parsed = {}
    for host, items in entries.items():
        parsed[host] = []
        for item in items or []:
            if not item.get("cidr"):
                continue
            iface = ipaddress.IPv4Interface(item["cidr"])
            parsed[host].append((item["iface"], iface))
    links = {}
    for host, ends in parsed.items():
        links[host] = []
        for name, iface in ends:
            for peer, peer_ends in parsed.items():
                if peer == host:
                    continue
                best = None
                for peer_name, peer_iface in peer_ends:
                    if peer_iface.network != iface.network or peer_iface.ip == iface.ip:
                        continue
                    candidate = (peer_name != name, peer_name, peer_iface)
                    if best is None or candidate[0] < best[0]:
                        best = candidate
                if best is not None:
                    links[host].append({"iface": name, "address": str(iface.ip), "peer": peer,
                                        "peer_iface": best[1], "peer_address": str(best[2].ip)})
    return links


def mtu_errors(links, mtus, planned, applies):
    """Links whose ends would have different MTUs after this run, before anything changes.

    ``links``: ``pair_links``'s result; ``mtus``: {host: {iface: current MTU}}; ``planned``: the netplan MTU or
    None (left alone); ``applies``: {host: whether this run applies netplan there}. A node where netplan is applied
    gets the planned MTU; elsewhere the MTU stays what it is.
    """
    errors = []
    seen = set()
    for host in sorted(links):
        for link in links[host]:
            key = tuple(sorted([(host, link["iface"]), (link["peer"], link["peer_iface"])]))
            if key in seen:
                continue
            seen.add(key)
            ends = [(host, link["iface"]), (link["peer"], link["peer_iface"])]
            after = {}
            for node, iface in ends:
                current = (mtus.get(node) or {}).get(iface)
                after[node] = planned if (planned is not None and applies.get(node)) else current
            values = [after[node] for node, dummy in ends]
            if None in values:
                continue
            kept = [node for node, dummy in ends if not (planned is not None and applies.get(node))]
            if values[0] != values[1]:
                errors.append("QSFP link %s of %s (%s) to %s (%s): the MTU would be %d on %s and %d on %s after this "
                              "run (planned: %s; %s): NCCL needs the same MTU on both ends. Restore it on the node "
                              "that differs (netplan apply), or set netplan_qsfp_mtu"
                              % (link["iface"], host, link["address"], link["peer"], link["peer_address"],
                                 values[0], host, values[1], link["peer"],
                                 planned if planned is not None else "left alone (netplan_qsfp_mtu: null)",
                                 "netplan is not applied on %s, its file is already the planned one"
                                 % " and ".join(kept) if kept else "netplan is applied on both"))
            elif planned is not None and values[0] != planned:
                errors.append("QSFP link %s of %s (%s) to %s (%s): the MTU is %d on both ends but netplan plans %d "
                              "and its file is already installed: something changed it since (netplan apply on "
                              "both nodes restores it)"
                              % (link["iface"], host, link["address"], link["peer"], link["peer_address"], values[0],
                                 planned))
    return errors


def image_report(ref, found, reported):
    """One line on the image a node runs: ID, repository digest and the TensorRT-LLM release it reports."""
    if not found.get("present"):
        return "%s: not on the node yet (pulled before the container starts)" % ref
    digests = found.get("repo_digests") or []
    return "%s: ID %s, digest %s, TensorRT-LLM %s" % (
        ref, (found.get("id") or "?")[:19], ", ".join(digests) if digests else "none (built or loaded locally, "
        "never pulled)", reported or "not reported by the image (no version label or environment variable)")


def image_drift(ref, found, container):
    """A warning when the tag now names another image than the one the container was created from, else ""."""
    if not container or "@sha256:" in ref or not found.get("present"):
        return ""
    if container.get("image_ref") != ref or not container.get("image_id"):
        return ""
    if container["image_id"] != found.get("id"):
        return ("%s now points to %s, but the container %s was created from %s in an earlier run: it is recreated "
                "with the new image. Pin the image by digest (trtllm_container_image: repository@sha256:...) to keep "
                "a release fixed" % (ref, found.get("id", "?")[:19], container.get("name", "?"),
                                     container["image_id"][:19]))
    return ""
