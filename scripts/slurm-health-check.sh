#!/bin/sh
# Slurm's HealthCheckProgram (slurm.conf), or a prolog: `sentinel health` on this node,
# which drains it (reason "sentinel: ...") when it fails twice for a fault of its own,
# and never for the health check's own errors (exit 2). docs/vetting.md says how.
#
# slurmd runs it as root with SLURMD_NODENAME and nothing else in its environment.
# What it runs comes from the file $SENTINEL_HEALTH_ENV (default
# /etc/mpi-sentinel/health.env), sourced as shell with every variable it sets
# exported (SLURMD_NODENAME may be used in it):
#   SENTINEL_HEALTH_SYSTEM=SITE:node              # a local-scheduler partition (required)
#   SENTINEL_HEALTH_OPTIONS="-S transports=openmpi/ucx-sm"   # reframe options (optional)
#   SENTINEL_HEALTH_DRAIN="--max-drain 5% --drain-window 24"  # the drain guard (optional)
#   SENTINEL_OUTPUT=/var/lib/mpi-sentinel/health  # this node's own: reports, stage, results
#   SENTINEL_HEALTH_LOG=/var/log/mpi-sentinel-health.log     # where its output goes
#   OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # Open MPI as root
#   SENTINEL_HEALTH_LOCK=/run/mpi-sentinel-health.lock  # one check of this node at a time
#   SENTINEL_HEALTH_LOCK_WAIT=0                   # seconds to wait for the lock
set -u
export PATH  # slurmd gives none: the shell's default, for the programs it starts
env_file=${SENTINEL_HEALTH_ENV:-/etc/mpi-sentinel/health.env}
if [ ! -r "$env_file" ]; then
    echo "slurm-health-check: $env_file is not readable: it names SENTINEL_HEALTH_SYSTEM" >&2
    exit 2
fi
set -a
. "$env_file"
set +a
if [ -n "${SENTINEL_HEALTH_LOG:-}" ]; then
    exec >>"$SENTINEL_HEALTH_LOG" 2>&1
    echo "slurm-health-check: ${SLURMD_NODENAME:-$(hostname -s)}: $(date -u +%FT%TZ)"
fi
if [ -z "${SENTINEL_HEALTH_SYSTEM:-}" ]; then
    echo "slurm-health-check: $env_file sets no SENTINEL_HEALTH_SYSTEM (SITE:PARTITION)" >&2
    exit 2
fi
# One health check of this node at a time: slurmd starts one every
# HealthCheckInterval whether the last has ended or not. Nodes that share
# CPUs (the test rig's) share the lock and wait their turn.
lock=${SENTINEL_HEALTH_LOCK:-/run/mpi-sentinel-health.lock}
exec 9>"$lock" || exit 2
if ! flock -w "${SENTINEL_HEALTH_LOCK_WAIT:-0}" 9; then
    echo "slurm-health-check: another health check holds $lock: not started"
    exit 0
fi
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC2086 # the options are words, as on a command line
exec "$here/.venv/bin/sentinel" health --system "$SENTINEL_HEALTH_SYSTEM" --drain \
    ${SENTINEL_HEALTH_DRAIN:-} -- ${SENTINEL_HEALTH_OPTIONS:-}
