# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the bench scripts that read a *_perf table (nccl-tests' columns: size count type
# redop root, then time algbw busbw #wrong for out of place, and the same for in place).
#   perf_rows KEY...   the table on stdin -> "KEY... size time_us busbw_GBs", out-of-place columns
#   perf_wrong         the table on stdin -> how many sizes report wrong values in either column
#                      (sendrecv_perf's in-place #wrong is N/A)
perf_rows() {
  awk -v k="$*" '$1 ~ /^[0-9]+$/ && NF >= 8 {print k, $1, $6, $8}'
}
perf_wrong() {
  awk '$1 ~ /^[0-9]+$/ && NF >= 13 && ($9 != 0 || ($13 != 0 && $13 != "N/A")) {w++}
       END {print w + 0}'
}
