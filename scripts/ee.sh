#!/usr/bin/env bash
# `make ee`: build the execution environment (EE) image for AWX / ansible-runner with ansible-builder,
# offline with respect to registries, Galaxy and (inside the build) PyPI:
#   base image     local/spark-lab-base:latest, built by `molecule/resources/lab/lab build`
#   collections    dgx_spark.specdec (scripts/build_collection.sh: tracked files) and its dependencies, packed
#                  from the venv's `ansible` package, installed from local tarballs
#   Python         a wheelhouse staged on the host (pip wheel, through the host's PyPI access)
#                  (what ansible-builder installs, and every collection's meta/ee-requirements.txt)
# Result: local/dgx-spark-specdec-ee:<galaxy.yml version> and :latest. The image carries a label
# with the hash of all inputs; when it matches, nothing is built.
#
#   scripts/ee.sh [--force] [--no-cache] [--refresh] [--check]
#     --force     build even if the image is current
#     --no-cache  build without docker's layer cache (implies --force): a cold build
#     --refresh   resolve the wheelhouse again (newer releases on PyPI); otherwise it is reused
#                 while the list of requirements is unchanged
#     --check     run the smoke checks even if the image is current
# Inputs and outputs: execution-environment/ (definition), build/ee/ (staging, context, logs).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
export DOCKER_BUILDKIT=0

DEFINITION=execution-environment/execution-environment.yml
BASE_IMAGE=local/spark-lab-base:latest
IMAGE_REPO=local/dgx-spark-specdec-ee
HASH_LABEL=dgx-spark.ee.inputs
EE=build/ee
PY=.venv/bin/python

log() { printf '[ee] %s\n' "$*"; }
die() { printf '[ee] ERROR: %s\n' "$*" >&2; exit 1; }

force=0 refresh=0 check=0 no_cache=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --no-cache) force=1; no_cache=(--no-cache) ;;
    --refresh) refresh=1 ;;
    --check) check=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "unknown argument: $arg (see scripts/ee.sh --help)" ;;
  esac
done

[[ -x $PY ]] || die "no project venv at .venv (run: make venv)"
for tool in ansible-galaxy ansible-builder docker tar sha256sum flock; do
  command -v "$tool" >/dev/null || die "missing tool: $tool (run: make venv; make docker)"
done
docker info >/dev/null 2>&1 || die "docker engine not reachable (run: make docker)"

mkdir -p "$EE/logs"
# One EE build at a time in this checkout.
exec 8>"$EE/.lock"
flock -w 1800 8 || die "timed out waiting for another scripts/ee.sh ($EE/.lock)"

# ansible-galaxy must see only what this script gives it: not the checkout's ansible.cfg
# (`make` exports ANSIBLE_CONFIG) nor .collections, where dgx_spark.specdec is the live checkout.
unset ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS

start=$SECONDS
read -r NAMESPACE NAME VERSION < <("$PY" -c '
import yaml
g = yaml.safe_load(open("galaxy.yml"))
print(g["namespace"], g["name"], g["version"])')
[[ -n ${VERSION:-} ]] || die "cannot read namespace, name and version from galaxy.yml"
IMAGE="$IMAGE_REPO:$VERSION"

# --------------------------------------------------------------------------------------------
# a. Base image: the lab's Debian 12 base (python3, python3-pip, openssh-client).
# --------------------------------------------------------------------------------------------
log "base image: molecule/resources/lab/lab build (builds only what is missing)"
if ! molecule/resources/lab/lab build; then
  # The EE needs only the base; a broken lab image further down must not stop it.
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 \
    || die "lab build failed and $BASE_IMAGE does not exist"
  log "WARNING: lab build failed; going on with the existing $BASE_IMAGE"
fi
# The wheelhouse is resolved by the host's pip for the host's Python: the base must have the same
# Python and machine, and pip. Checked once per base image.
base_id=$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE")
host_py=$("$PY" -c 'import platform, sys; print("%d.%d" % sys.version_info[:2], platform.machine())')
if [[ $(cat "$EE/base-checked" 2>/dev/null) != "$base_id $host_py" ]]; then
  base_info=$(docker run --rm --network none --entrypoint /bin/sh "$BASE_IMAGE" -c \
    'python3 -c "import platform, sys; print(\"%d.%d\" % sys.version_info[:2], platform.machine())" \
     && python3 -m pip --version' 2>&1) \
    || die "$BASE_IMAGE has no python3 with pip (python3-pip in molecule/resources/lab/images/base/recipe.conf):
$base_info"
  [[ ${base_info%%$'\n'*} == "$host_py" ]] \
    || die "the wheelhouse is resolved with the host's Python ($host_py), the base has ${base_info%%$'\n'*}"
  log "base $BASE_IMAGE: Python ${base_info%%$'\n'*}, ${base_info#*$'\n'}"
  echo "$base_id $host_py" >"$EE/base-checked"
fi

# --------------------------------------------------------------------------------------------
# b. The collection tarball.
# --------------------------------------------------------------------------------------------
rm -rf "$EE/collections"
mkdir -p "$EE/collections"
# From git's tracked files only (scripts/build_collection.sh): nothing a run left in the checkout ships in the EE.
log "scripts/build_collection.sh $EE/collections (tracked files)"
scripts/build_collection.sh "$EE/collections" >"$EE/logs/collection-build.log" 2>&1 \
  || { cat "$EE/logs/collection-build.log" >&2; die "building the collection failed"; }

# --------------------------------------------------------------------------------------------
# c. Tarballs of the dependencies (and theirs), from the venv's installed `ansible` package.
#    A Galaxy artifact is a tar.gz with MANIFEST.json and FILES.json at its root. The `ansible`
#    package leaves out tests/, docs/ and CI files that FILES.json lists: the artifact gets a
#    FILES.json of the files that are there (their checksums are checked again at install) and a
#    MANIFEST.json with that FILES.json's checksum. Fixed mtimes and order: reproducible bytes.
# --------------------------------------------------------------------------------------------
"$PY" - "$EE/collections" <<'PYEOF'
import collections, gzip, hashlib, io, json, os, sys, sysconfig, tarfile
import yaml

out = sys.argv[1]
root = os.path.join(sysconfig.get_paths()["purelib"], "ansible_collections")
todo = collections.deque(yaml.safe_load(open("galaxy.yml")).get("dependencies") or {})
done = set()
while todo:
    fqcn = todo.popleft()
    if fqcn in done:
        continue
    done.add(fqcn)
    ns, name = fqcn.split(".")
    src = os.path.join(root, ns, name)
    try:
        manifest = json.load(open(os.path.join(src, "MANIFEST.json")))
        files = json.load(open(os.path.join(src, "FILES.json")))
    except OSError as exc:
        sys.exit(f"[ee] ERROR: {fqcn} is not installed in the venv with MANIFEST.json/FILES.json ({exc})")
    info = manifest["collection_info"]
    todo.extend(info.get("dependencies") or {})
    present = [e for e in files["files"] if e["name"] != "." and os.path.lexists(os.path.join(src, e["name"]))]
    files["files"] = [e for e in files["files"] if e["name"] == "."] + present
    files_json = json.dumps(files, indent=4, sort_keys=True).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    manifest_json = json.dumps(manifest, indent=4, sort_keys=True).encode()
    mtime = int(os.stat(os.path.join(src, "MANIFEST.json")).st_mtime)

    def info_for(rel, mode, size=0, kind=tarfile.REGTYPE):
        ti = tarfile.TarInfo(rel)
        ti.type, ti.mode, ti.size, ti.mtime = kind, mode, size, mtime
        return ti

    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in (("MANIFEST.json", manifest_json), ("FILES.json", files_json)):
            tar.addfile(info_for(rel, 0o644, len(data)), io.BytesIO(data))
        for entry in present:
            path = os.path.join(src, entry["name"])
            if entry["ftype"] == "dir":
                tar.addfile(info_for(entry["name"], 0o755, kind=tarfile.DIRTYPE))
            else:
                with open(path, "rb") as fh:
                    data = fh.read()
                mode = 0o755 if os.stat(path).st_mode & 0o100 else 0o644
                tar.addfile(info_for(entry["name"], mode, len(data)), io.BytesIO(data))
    dest = os.path.join(out, f"{ns}-{name}-{info['version']}.tar.gz")
    with open(dest, "wb") as fh:
        fh.write(buf.getvalue())
    left_out = len(json.load(open(os.path.join(src, "FILES.json")))["files"]) - len(files["files"])
    print(f"[ee] packed {fqcn} {info['version']} from the venv ({len(present)} entries; "
          f"{left_out} listed but not shipped by the ansible package: tests, docs, CI): {dest}")
PYEOF

# The galaxy requirements: every tarball, type: file, relative to the directory of the file
# (build/ee here, /build in the image, where ansible-builder copies the context's _build/).
tarballs=("$EE/collections/$NAMESPACE-$NAME-$VERSION.tar.gz")
for t in "$EE"/collections/*.tar.gz; do
  [[ $t == "${tarballs[0]}" ]] || tarballs+=("$t")
done
[[ -f ${tarballs[0]} ]] || die "ansible-galaxy did not write ${tarballs[0]}"
{
  echo '---'
  echo "# Generated by scripts/ee.sh: the collection tarballs of the EE, installed with --offline."
  echo 'collections:'
  for t in "${tarballs[@]}"; do
    printf '  - name: collections/%s\n    type: file\n' "${t##*/}"
  done
} >"$EE/requirements.yml"

# Galaxy must accept the tarballs offline: install them into a scratch directory, as the galaxy
# stage will. The result also feeds ansible-builder's introspection below.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ee-collections.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
log "ansible-galaxy collection install --offline -r $EE/requirements.yml (scratch check)"
# Only the scratch directory counts as installed: not ~/.ansible nor the venv's `ansible` package.
(cd "$EE" && ANSIBLE_COLLECTIONS_PATH="$scratch" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false \
   ansible-galaxy collection install --offline -r requirements.yml -p "$scratch") \
  >"$EE/logs/collection-install.log" 2>&1 \
  || { tail -n 20 "$EE/logs/collection-install.log" >&2; die "ansible-galaxy rejected the collection tarballs offline"; }
for t in "${tarballs[@]}"; do
  fqcn=${t##*/}; fqcn=${fqcn%-*.tar.gz}
  [[ -f $scratch/ansible_collections/${fqcn%%-*}/${fqcn#*-}/MANIFEST.json ]] \
    || die "${t##*/} was not installed by ansible-galaxy (see $EE/logs/collection-install.log)"
done

# --------------------------------------------------------------------------------------------
# d. The wheelhouse: every requirement pip installs in any stage of the build.
# --------------------------------------------------------------------------------------------
create_context() {
  rm -rf "$EE/context"
  ansible-builder create --output-filename Dockerfile -f "$DEFINITION" -c "$EE/context" \
    >"$EE/logs/ansible-builder-create.log" 2>&1 \
    || { cat "$EE/logs/ansible-builder-create.log" >&2; die "ansible-builder create failed"; }
}
mkdir -p "$EE/wheels"
create_context
# The generated Dockerfile names what pip installs in the base, builder and final stages
# (ansible-core/ansible-runner, bindep pyyaml packaging, dumb-init); the collections'
# requirements come from ansible-builder's own introspection script, run on the scratch install.
"$PY" "$EE/context/_build/scripts/introspect.py" introspect "$scratch" \
  --write-pip "$scratch/collection-requirements.txt" >"$EE/logs/introspect.log" 2>&1 \
  || { cat "$EE/logs/introspect.log" >&2; die "introspect.py failed"; }
"$PY" - "$EE/context/Dockerfile" "$scratch/collection-requirements.txt" >"$EE/wheel-requirements.txt" <<'PYEOF'
import os, re, shlex, sys

reqs = set()
for line in open(sys.argv[1]):
    m = re.match(r'ARG ANSIBLE_INSTALL_REFS="(.*)"$', line.strip())
    if m:
        reqs.update(m.group(1).split())
    if line.startswith("RUN ") and " -m pip install " in line:
        words = shlex.split(line[4:])
        args = words[words.index("install") + 1:]
        reqs.update(w for w in args if not w.startswith(("-", "$")))
if os.path.exists(sys.argv[2]):
    for line in open(sys.argv[2]):
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        if line:
            reqs.add(line)
print("\n".join(sorted(reqs, key=str.lower)))
PYEOF
log "wheelhouse requirements: $(tr '\n' ' ' <"$EE/wheel-requirements.txt")"
# The collection's own controller requirements (meta/ee-requirements.txt: matplotlib for the tuner's plots)
# reach the wheelhouse through the introspection above; a name missing here would fail the offline build late.
while read -r req; do
  grep -qix -- "$req" "$EE/wheel-requirements.txt" \
    || die "$req (meta/ee-requirements.txt) is not in the wheelhouse requirements; see $EE/logs/introspect.log"
done < <(sed -e 's/\(^\|[[:space:]]\)#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' meta/ee-requirements.txt)
if [[ $refresh == 0 ]] && cmp -s "$EE/wheel-requirements.txt" "$EE/wheels/.requirements"; then
  log "wheelhouse $EE/wheels is current ($(find "$EE/wheels" -name '*.whl' | wc -l) wheels; --refresh to resolve again)"
else
  log "pip wheel -r $EE/wheel-requirements.txt -w $EE/wheels (host pip, Python $host_py)"
  rm -rf "$EE/wheels.new"
  "$PY" -m pip wheel --disable-pip-version-check --wheel-dir "$EE/wheels.new" -r "$EE/wheel-requirements.txt" \
    >"$EE/logs/pip-wheel.log" 2>&1 \
    || { tail -n 20 "$EE/logs/pip-wheel.log" >&2; die "pip wheel failed (full log: $EE/logs/pip-wheel.log)"; }
  cp "$EE/wheel-requirements.txt" "$EE/wheels.new/.requirements"
  rm -rf "$EE/wheels"
  mv "$EE/wheels.new" "$EE/wheels"
  log "wheelhouse: $(find "$EE/wheels" -name '*.whl' | wc -l) wheels, $(du -sh "$EE/wheels" | cut -f1)"
fi

# --------------------------------------------------------------------------------------------
# e. The build context (again, now with the wheels) and the image, unless it is current.
# --------------------------------------------------------------------------------------------
create_context
[[ -n $(find "$EE/context/_build/wheels" -name '*.whl' -print -quit) ]] || die "no wheels in the build context"
inputs_hash=$(
  {
    echo "base $base_id"
    # Collection tarballs by content (ansible-galaxy's tar headers carry the build time).
    for t in "${tarballs[@]}"; do
      echo "collection ${t##*/} $(tar -xzOf "$t" MANIFEST.json FILES.json | sha256sum | cut -c1-64)"
    done
    # Dockerfile, ansible-builder's scripts, requirements, pip.conf, wheels.
    (cd "$EE/context" && find . -type f ! -path './_build/collections/*' -print0 | LC_ALL=C sort -z \
       | xargs -0 sha256sum)
  } | sha256sum | cut -c1-64)

current_id=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
current_hash=$(docker image inspect -f "{{ index .Config.Labels \"$HASH_LABEL\" }}" "$IMAGE" 2>/dev/null || true)
if [[ $force == 0 && -n $current_id && $current_hash == "$inputs_hash" ]]; then
  docker tag "$IMAGE" "$IMAGE_REPO:latest"
  log "EE image $IMAGE is current (inputs ${inputs_hash:0:12}), checked in $((SECONDS - start)) s"
  [[ $check == 1 ]] || exit 0
else
  logf="$EE/logs/docker-build.log"
  # --network none: nothing in the build can reach a registry, Galaxy, PyPI or apt.
  # --force-rm: a failed step leaves no stopped container behind.
  build=(docker build --network none --force-rm "${no_cache[@]}" -f "$EE/context/Dockerfile"
         -t "$IMAGE" -t "$IMAGE_REPO:latest" --label "$HASH_LABEL=$inputs_hash" "$EE/context")
  log "building $IMAGE: ${build[*]} (log: $logf)"
  build_start=$SECONDS
  if ! "${build[@]}" >"$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    if grep -q 'Unable to locate package' "$logf"; then
      log "HINT: a bindep requirement is missing from the base image and apt cannot install it offline:" >&2
      log "      add it to PACKAGES in molecule/resources/lab/images/base/recipe.conf" >&2
    elif grep -qE 'No matching distribution|Could not find a version' "$logf"; then
      log "HINT: pip needed something the wheelhouse lacks: scripts/ee.sh --refresh" >&2
    fi
    die "docker build failed (full log: $logf)"
  fi
  build_secs=$((SECONDS - build_start))
  # The previous image of this script, if the new tags left it untagged.
  if [[ -n $current_id && $(docker image inspect -f '{{len .RepoTags}}' "$current_id" 2>/dev/null) == 0 ]]; then
    if docker image rm "$current_id" >/dev/null 2>&1; then
      log "removed the previous EE image ${current_id:7:12} (untagged by this build)"
    fi
  fi
  log "built $IMAGE and $IMAGE_REPO:latest in $build_secs s"
fi

# --------------------------------------------------------------------------------------------
# f. Smoke checks, with no network: collections, ansible-runner, matplotlib, the docs, the ssh client.
# --------------------------------------------------------------------------------------------
log "smoke checks of $IMAGE"
smoke=$(docker run --rm --network none -e ANSIBLE_NOCOLOR=1 "$IMAGE" bash -euc '
  echo "== ansible-galaxy collection list"; ansible-galaxy collection list 2>&1
  echo "== ansible --version"; ansible --version | head -n 1
  echo "== ansible-runner --version"; ansible-runner --version
  echo "== matplotlib (the tuner'"'"'s plots, meta/ee-requirements.txt)"
  python3 -c "import matplotlib; matplotlib.use(\"Agg\"); from matplotlib import pyplot; print(\"matplotlib\", matplotlib.__version__)"
  echo "== ansible-doc '"$NAMESPACE.$NAME"'.specdec_plan"; ansible-doc '"$NAMESPACE.$NAME"'.specdec_plan | head -n 3
  echo "== ssh -V"; ssh -V 2>&1
  echo "== ssh-agent / ssh-add (as ansible-runner does for a machine credential)"
  ssh-keygen -q -t ed25519 -N "" -f /tmp/smoke_key
  eval "$(ssh-agent -s)" >/dev/null
  ssh-add /tmp/smoke_key 2>&1
  ssh-add -l
  ssh-agent -k >/dev/null
' 2>&1) || { printf '%s\n' "$smoke" >&2; die "smoke checks failed in $IMAGE"; }
printf '%s\n' "$smoke" | sed 's/^/    /'
grep -q "^matplotlib " <<<"$smoke" || die "matplotlib does not import in $IMAGE (meta/ee-requirements.txt)"
for fqcn in "$NAMESPACE.$NAME" community.docker; do
  grep -qE "^${fqcn}[[:space:]]" <<<"$smoke" || die "$fqcn is not installed in $IMAGE"
done
size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
log "EE image $IMAGE ok: $((size / 1000000)) MB, base $BASE_IMAGE; $((SECONDS - start)) s in all"
