# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which host directories the collection may manage: never a system directory, the home itself, or one inside
another (the roles create them, set their owner and mode, mount them and write files in them).

Standard library only; the plan calls ``problems`` for each node before anything changes.
"""

import posixpath

# Directories of the operating system: neither they nor anything under them is the collection's to manage.
SYSTEM_TREES = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc",
                "/sys", "/run", "/var/run", "/var/lock", "/var/spool", "/var/log", "/var/cache/apt", "/var/lib/dpkg",
                "/var/lib/apt", "/var/lib/docker", "/var/lib/containerd", "/snap")
# Shared parents: a directory under them is fine (/home/USER/models, /var/lib/NAME, /opt/NAME), they are not.
SHARED_PARENTS = ("/", "/home", "/root", "/var", "/var/lib", "/var/cache", "/opt", "/srv", "/mnt", "/media", "/tmp",
                  "/var/tmp", "/usr/local", "/data", "/raid", "/scratch")
ACCEPTED = "a directory of its own, not a system directory (%s), not the home directory, and not inside another " \
           "directory the collection manages"
NETPLAN_DIR = "/etc/netplan"


def normalize(path):
    return posixpath.normpath(str(path)) if path else path


def inside(path, parent):
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def problems(dirs, home):
    """``dirs``: [(variable, path)] of one node; ``home``: the login user's home -> [(variable, path, accepted)]."""
    out = []
    accepted = ACCEPTED % ", ".join(SYSTEM_TREES[:4] + ("...",))
    fine = []
    for variable, path in dirs:
        norm = normalize(path)
        if not norm or not norm.startswith("/"):
            continue  # the format check names it
        if norm in SHARED_PARENTS or any(inside(norm, tree) for tree in SYSTEM_TREES):
            out.append((variable, path, accepted + "; %s is the system's" % norm))
        elif home and norm == normalize(home):
            out.append((variable, path, accepted + "; %s is the login user's home" % norm))
        else:
            fine.append((variable, norm))
    # One inside another: the teardown and the mounts could not tell them apart.
    for i, (variable, norm) in enumerate(fine):
        for other, other_norm in fine[:i]:
            if inside(norm, other_norm) or inside(other_norm, norm):
                out.append((variable, norm, accepted + "; it overlaps %s (%s)" % (other, other_norm)))
    return out


def netplan_problem(path):
    """The netplan file must be a .yaml file directly in /etc/netplan (netplan reads only those)."""
    norm = normalize(path) or ""
    if posixpath.dirname(norm) != NETPLAN_DIR or not norm.endswith(".yaml") or norm.startswith(NETPLAN_DIR + "/."):
        return "a file directly in %s/ ending in .yaml (for example %s/40-cx7.yaml)" % (NETPLAN_DIR, NETPLAN_DIR)
    return None
