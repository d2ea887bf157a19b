# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the GPU scripts whose ranks share a GPU as processes: NVIDIA's MPS control daemon
# runs their kernels side by side (without it two processes' kernels take turns, and every call
# takes milliseconds). Pipe and log folders default to /tmp/monel-mps and /tmp/monel-mpsl.
#   mps_start     starts it; mps=1 when this call started it (then mps_stop quits it), else 0
#   mps_restart   quits and starts it again when this script started it: a client killed at a
#                 time limit can leave it refusing the next ones
#   mps_stop      quits it if this script started it
mps=0

mps_start() {
  mps=0
  command -v nvidia-cuda-mps-control >/dev/null || return 0
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/monel-mps}
  export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/monel-mpsl}
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d 2>/dev/null && mps=1
  return 0
}

mps_stop() {
  [ "$mps" = 1 ] && echo quit | nvidia-cuda-mps-control
  mps=0
  return 0
}

# The old server takes a moment to go: a new start is refused until it has; tried for 10 s.
mps_restart() {
  [ "$mps" = 1 ] || return 0
  echo quit | nvidia-cuda-mps-control
  local end=$((SECONDS + 10))
  mps=0
  until nvidia-cuda-mps-control -d 2>/dev/null; do
    [ $SECONDS -lt $end ] || return 0
    sleep 0.2
  done
  mps=1
}
