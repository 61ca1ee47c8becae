#!/bin/sh
# Slurm's HealthCheckProgram (slurm.conf), or a prolog: `sentinel health` on this node,
# which drains it (reason "sentinel: ...") when it fails twice. docs/vetting.md says how.
#
# What it runs comes from the file $SENTINEL_HEALTH_ENV (default
# /etc/mpi-sentinel/health.env), sourced as shell:
#   SENTINEL_HEALTH_SYSTEM=SITE:node              # a local-scheduler partition (required)
#   SENTINEL_HEALTH_OPTIONS="-S transports=openmpi/ucx-sm"   # reframe options (optional)
#   SENTINEL_OUTPUT=/shared/mpi-sentinel          # where reports and the results DB go
set -u
env_file=${SENTINEL_HEALTH_ENV:-/etc/mpi-sentinel/health.env}
if [ ! -r "$env_file" ]; then
    echo "slurm-health-check: $env_file is not readable: it names SENTINEL_HEALTH_SYSTEM" >&2
    exit 1
fi
. "$env_file"
if [ -z "${SENTINEL_HEALTH_SYSTEM:-}" ]; then
    echo "slurm-health-check: $env_file sets no SENTINEL_HEALTH_SYSTEM (SITE:PARTITION)" >&2
    exit 1
fi
[ -n "${SENTINEL_OUTPUT:-}" ] && export SENTINEL_OUTPUT
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC2086 # the options are words, as on a command line
exec "$here/.venv/bin/sentinel" health --system "$SENTINEL_HEALTH_SYSTEM" --drain \
    -- ${SENTINEL_HEALTH_OPTIONS:-}
