"""``hf`` / ``huggingface-cli`` stand-in: ``download`` fills the HF cache (or --local-dir) with a
small placeholder checkpoint, with the hub's gating and token rules; nothing leaves the machine.

Environment: HF_TOKEN / HUGGING_FACE_HUB_TOKEN, HF_TOKEN_PATH (default $HF_HOME/token), HF_HOME,
HF_HUB_CACHE, HF_HUB_OFFLINE, STANDIN_DOWNLOAD_SECONDS (simulated duration); the hub's access rules (gated and
private repositories, grants per token, revisions, a disk that fills up) are hub.py's policy.
"""

import argparse
import fnmatch
import os
import sys
import time

from . import env_float, hf_home, hf_hub_cache, hfcache, hub

TOKEN_RE = hub.TOKEN_RE
HUB_VERSION = "0.35.3"


class HubError(Exception):
    pass


def find_token(cli_token):
    """(token, source) following huggingface_hub's order; (None, None) when not logged in."""
    if cli_token:
        return cli_token, "--token"
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if os.environ.get(name):
            return os.environ[name].strip(), name
    path = os.environ.get("HF_TOKEN_PATH") or os.path.join(hf_home(), "token")
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read().strip()
        if token:
            return token, path
    except OSError:
        pass
    return None, None


_request_id = hub.request_id


_ERRORS = {"RepoNotFound": "RepositoryNotFoundError", "GatedRepo": "GatedRepoError",
           "RevisionNotFound": "RevisionNotFoundError", None: "HfHubHTTPError"}


def check_access(repo_id, revision, token):
    try:
        hub.access(repo_id, revision, token)
    except hub.Refused as exc:
        raise HubError("huggingface_hub.errors.%s: %s" % (_ERRORS[exc.code], exc.message))


def select_files(all_files, filenames, include, exclude, repo_id, revision):
    if filenames:
        missing = [f for f in filenames if f not in all_files]
        if missing:
            raise HubError("huggingface_hub.errors.EntryNotFoundError: 404 Client Error. (Request ID: %s)\n\n"
                           "Entry Not Found for url: https://huggingface.co/%s/resolve/%s/%s."
                           % (_request_id(), repo_id, revision, missing[0]))
        names = list(filenames)
    else:
        names = sorted(all_files)
    if include:
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in include)]
    if exclude:
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in exclude)]
    return names


def _size(num):
    for unit in ("B", "kB", "MB"):
        if num < 1000:
            return "%d%s" % (num, unit)
        num /= 1000.0
    return "%.1fGB" % num


def download(args):
    repo_id = args.repo_id
    if args.repo_type != "model":
        raise HubError("the lab stand-in only simulates model repositories (got --repo-type %s)" % args.repo_type)
    if not hfcache.valid_repo_id(repo_id):
        raise HubError("huggingface_hub.errors.HFValidationError: Repo id must use alphanumeric chars or '-', '_', "
                       "'.', '--' and '..' are forbidden, '-' and '.' cannot start or end the name, max length is "
                       "96: '%s'." % repo_id)
    revision = args.revision or "main"
    commit = hfcache.commit_for(repo_id, revision)
    files = hfcache.placeholder_files(repo_id)
    names = select_files(files, args.filenames, args.include, args.exclude, repo_id, revision)
    cache_dir = args.cache_dir or hf_hub_cache()
    local_dir = args.local_dir

    if local_dir:
        target = os.path.abspath(local_dir)
        complete = [n for n in names if hfcache.local_file_complete(target, commit, n, files[n])]
    else:
        target = os.path.join(cache_dir, hfcache.repo_folder(repo_id), "snapshots", commit)
        complete = [n for n in names if hfcache.cache_file_complete(cache_dir, repo_id, commit, n, files[n])]
    todo = [n for n in names if n not in complete or args.force_download]

    if not todo:
        # Still a metadata call on the real hub (unless offline): gating applies to it too.
        if os.environ.get("HF_HUB_OFFLINE", "0") not in ("1", "true", "True", "ON", "on", "yes"):
            check_access(repo_id, revision, find_token(args.token)[0])
        if not args.quiet:
            print("All %d file(s) of %s@%s are already present in %s; nothing to download."
                  % (len(names), repo_id, revision, target), file=sys.stderr, flush=True)
        print(target, flush=True)
        return 0

    if os.environ.get("HF_HUB_OFFLINE", "0") in ("1", "true", "True", "ON", "on", "yes"):
        raise HubError("huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk "
                       "cache and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, "
                       "set 'local_files_only' to False.")
    token, _source = find_token(args.token)
    check_access(repo_id, revision, token)

    delay = max(0.0, env_float("STANDIN_DOWNLOAD_SECONDS", 0.0)) / max(1, len(todo))
    stamp = time.time()
    total = len(names)
    if not args.quiet:
        print("Fetching %d files:   0%%|          | 0/%d [00:00<?, ?it/s]" % (total, total), file=sys.stderr, flush=True)
    done = len(complete)
    for name in todo:
        data = files[name]
        if not args.quiet:
            print("Downloading '%s' to '%s' (%s)" % (name, os.path.join(target, name), _size(len(data))),
                  file=sys.stderr, flush=True)
        if delay:
            time.sleep(delay)
        if hub.fills_disk(repo_id):
            raise HubError("OSError: [Errno 28] No space left on device: '%s'" % os.path.join(target, name))
        if local_dir:
            hfcache.write_local_file(target, commit, name, data, stamp)
        else:
            hfcache.write_cache_file(cache_dir, repo_id, commit, revision, name, data)
        done = min(total, done + 1)
        if not args.quiet:
            progress = "#" * (10 * done // total)
            print("Fetching %d files: %3d%%|%-10s| %d/%d" % (total, 100 * done // total, progress, done, total),
                  file=sys.stderr, flush=True)
    print(target, flush=True)
    return 0


def whoami(args):
    token, _source = find_token(getattr(args, "token", None))
    if token is None:
        print("Not logged in", file=sys.stderr)
        return 1
    try:
        hub.whoami(token)
    except hub.Refused:
        print("Invalid user token.", file=sys.stderr)
        return 1
    print("user: spark-lab\norgs: ")
    return 0


def build_parser(prog):
    parser = argparse.ArgumentParser(prog=prog, description="Hugging Face Hub CLI (DGX Spark lab stand-in)")
    parser.add_argument("--version", action="version", version="huggingface_hub %s" % HUB_VERSION)
    sub = parser.add_subparsers(dest="command", metavar="{download,auth,whoami,version,env}")
    dl = sub.add_parser("download", help="Download files from the Hub")
    dl.add_argument("repo_id")
    dl.add_argument("filenames", nargs="*")
    dl.add_argument("--repo-type", choices=("model", "dataset", "space"), default="model")
    dl.add_argument("--revision")
    dl.add_argument("--include", nargs="*", default=None)
    dl.add_argument("--exclude", nargs="*", default=None)
    dl.add_argument("--cache-dir")
    dl.add_argument("--local-dir")
    dl.add_argument("--local-dir-use-symlinks", default=None, help=argparse.SUPPRESS)
    dl.add_argument("--force-download", action="store_true")
    dl.add_argument("--resume-download", action="store_true", help=argparse.SUPPRESS)
    dl.add_argument("--token")
    dl.add_argument("--quiet", action="store_true")
    dl.add_argument("--max-workers", type=int, default=8)
    dl.set_defaults(func=download)
    auth = sub.add_parser("auth", help="Manage authentication")
    auth_sub = auth.add_subparsers(dest="auth_command")
    who = auth_sub.add_parser("whoami")
    who.set_defaults(func=whoami)
    who2 = sub.add_parser("whoami")
    who2.set_defaults(func=whoami)
    ver = sub.add_parser("version")
    ver.set_defaults(func=lambda a: print("huggingface_hub version: %s" % HUB_VERSION) or 0)
    env = sub.add_parser("env")
    env.set_defaults(func=lambda a: print("- huggingface_hub version: %s\n- HF_HOME: %s\n- HF_HUB_CACHE: %s"
                                          % (HUB_VERSION, hf_home(), hf_hub_cache())) or 0)
    return parser


def main(argv=None, prog=None):
    prog = prog or os.path.basename(sys.argv[0]) or "hf"
    if prog.endswith(".py") or prog == "__main__":
        prog = "hf"
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except HubError as exc:
        print(str(exc), file=sys.stderr, flush=True)
        return 1
    except OSError as exc:
        print("OSError: %s" % exc, file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
