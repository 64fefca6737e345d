#!/usr/bin/env bash
# Like the release image's entrypoint: print the banner, then run the container's command.
set -e
if [[ -z ${STANDIN_QUIET_BANNER:-} ]]; then
  printf '\n===========================\n== TensorRT-LLM (lab stand-in) ==\n===========================\n\n'
  printf 'NVIDIA Release %s (simulated: no GPU, no CUDA; see molecule/resources/lab/README.md)\n\n' "$TRTLLM_VERSION"
fi
exec "$@"
