# SPDX-License-Identifier: BSD-3-Clause
# Namespace hosts for the multi-host tests (sourced by tests/net/run and tests/net/scale): each
# "host" a network namespace ${tag}h<i> with veth<i> at 10.77.0.<i+1>/24, bridged in a "switch"
# namespace ${tag}sw. The caller sets `tag` and keeps the names made in the array `namespaces`
# (drop_hosts, or its exit trap, removes them).

# make_hosts H: namespaces ${tag}h0.. with veth0.. at 10.77.0.1.., bridged in ${tag}sw
make_hosts() {
  local h=$1 sw="${tag}sw" i
  ip netns add "$sw" && namespaces+=("$sw") || return 1
  ip -n "$sw" link add br0 type bridge || return 1
  ip -n "$sw" link set br0 up || return 1
  for ((i = 0; i < h; i++)); do
    local ns="${tag}h$i"
    ip netns add "$ns" && namespaces+=("$ns") || return 1
    ip link add "veth$i" netns "$ns" type veth peer name "port$i" netns "$sw" || return 1
    ip -n "$sw" link set "port$i" master br0 up || return 1
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev "veth$i" || return 1
    ip -n "$ns" link set "veth$i" up || return 1
    ip -n "$ns" link set lo up || return 1
  done
}

drop_hosts() {
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  namespaces=()
}

# can_make_hosts: 0 when this user may make namespaces (root, `ip netns`); installs iproute2
# where it is missing and apt-get is there
can_make_hosts() {
  [ "$(id -u)" = 0 ] || return 1
  if ! command -v ip >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq iproute2) >/dev/null 2>&1
  fi
  command -v ip >/dev/null 2>&1 && ip netns add "${tag}probe" 2>/dev/null || return 1
  ip netns del "${tag}probe"
}
