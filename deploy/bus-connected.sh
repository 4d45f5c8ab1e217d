#!/bin/sh
# Health probe of an engine service (it has no HTTP listener): succeeds while this container holds
# an established TCP connection to the NATS port (default 4222), the only way requests reach it.
# It reads the kernel's socket table of the container's network namespace, so it sees only this
# container's connections.
#   svc-bus-connected [PORT]
set -eu
port=$(printf '%04X' "${1:-4222}")
# Columns: slot, local address, remote address, state (01 = ESTABLISHED).
exec grep -qE "^ *[0-9]+: [0-9A-F]+:[0-9A-F]{4} [0-9A-F]+:$port 01 " /proc/net/tcp /proc/net/tcp6
