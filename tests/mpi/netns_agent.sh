#!/bin/sh
# Open MPI's launch agent for emulated hosts (--mca plm_rsh_agent THIS): stands in for ssh.
# mpirun calls it as `AGENT HOST COMMAND...` (a remote shell command line, run by sh -c as
# sshd would); HOST is a network namespace's name (the hostfile names the namespaces), and the
# command runs inside it with its own UTS namespace whose hostname is HOST, so that every
# "host" has its own name as real ones do: Open MPI's node name (PMIX_HOSTNAME) and braid's
# host id (hostname + boot id) tell the emulated hosts apart.
# Needs root (ip netns exec, unshare --uts), as the namespaces themselves do.
set -eu
host=$1
shift
exec ip netns exec "$host" unshare --uts /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$*"' "$host" "$@"
