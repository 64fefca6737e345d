#!/usr/bin/env bash
# Like the Triton image's entrypoint: print the banner, then run the container's command.
set -e
if [[ -z ${STANDIN_QUIET_BANNER:-} ]]; then
  printf '\n=============================\n== Triton Inference Server (lab stand-in) ==\n=============================\n\n'
  printf 'NVIDIA Release %s (simulated: no GPU, no CUDA; see molecule/resources/lab/README.md)\n' "$NVIDIA_TRITON_SERVER_VERSION"
  printf 'Triton Server Version %s, TensorRT-LLM %s\n\n' "$TRITON_SERVER_VERSION" "$TRTLLM_VERSION"
fi
exec "$@"
