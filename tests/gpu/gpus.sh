# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the GPU scripts: gpu_count prints how many GPUs this process may use, nvidia-smi's
# count cut down to the entries of CUDA_VISIBLE_DEVICES when that is set (the scripts run on one
# GPU of a larger machine with CUDA_VISIBLE_DEVICES=0).
gpu_count() {
  local n v
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
    v=$(printf '%s\n' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c '[^[:space:]]')
    [ "$v" -lt "$n" ] && n=$v
  fi
  echo "$n"
}
