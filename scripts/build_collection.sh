#!/usr/bin/env bash
# `make build`: the collection tarball from git's tracked files only, into build/ (or $1).
#
#   scripts/build_collection.sh            tracked files as they are in the working tree (uncommitted edits
#                                          included, untracked files never): for development and CI
#   scripts/build_collection.sh --head     the committed tree of HEAD (git archive): for a release
#   scripts/build_collection.sh [--head] DIR   write the tarball to DIR (relative to the current directory)
#
# The files are copied to a temporary directory and `ansible-galaxy collection build` runs there, so nothing a
# run leaves in the checkout (tune-results/, logs, changelogs/.plugin-cache.yaml, a stray file) can end up in the
# tarball; galaxy.yml's build_ignore still applies on top (tests, molecule, scripts, ...).
# Prints the tarball's path on the last line.
set -euo pipefail

mode="worktree"
if [ "${1:-}" = "--head" ]; then
  mode="head"
  shift
fi
# DIR is relative to the caller's directory; the default build/ is the checkout's.
if [ -n "${1:-}" ]; then
  mkdir -p "$1"
  out=$(cd "$1" && pwd)
fi
cd "$(dirname "$0")/.."
root=$PWD
if [ -z "${out:-}" ]; then
  mkdir -p build
  out=$root/build
fi

git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "build_collection: $root is not a git checkout" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/specdec-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src=$tmp/ansible_collections/dgx_spark/specdec
mkdir -p "$src"

if [ "$mode" = head ]; then
  git archive --format=tar HEAD | tar -xf - -C "$src"
else
  # Tracked (and staged) paths that still exist in the working tree; a tracked file deleted in the working tree
  # is left out, as the next commit would. Symlinks stay symlinks.
  git ls-files -z --cached | while IFS= read -r -d '' path; do
    if [ -e "$path" ] || [ -L "$path" ]; then
      printf '%s\0' "$path"
    fi
  done | tar --null --no-recursion -T - -cf - | tar -xf - -C "$src"
fi

ansible-galaxy collection build "$src" --output-path "$out" --force >"$tmp/build.log" 2>&1 \
  || { cat "$tmp/build.log" >&2; exit 1; }
version=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' "$src/galaxy.yml")
tarball=$out/dgx_spark-specdec-$version.tar.gz
[ -f "$tarball" ] || { cat "$tmp/build.log" >&2; echo "build_collection: $tarball not written" >&2; exit 1; }
echo "build_collection: built from $( [ "$mode" = head ] && echo "HEAD ($(git rev-parse --short HEAD))" || echo "the working tree's tracked files")"
echo "$tarball"
