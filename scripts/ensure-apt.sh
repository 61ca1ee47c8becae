#!/bin/sh
# Install the Debian packages given as arguments that are missing, as root
# with apt-get; elsewhere say which are missing and go on (what needs them
# then says so itself).
set -eu
missing=$("$(dirname "$0")/missing-apt.sh" "$@")
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-apt: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
    exit 0
fi
echo "ensure-apt: not installing$missing (not root or not Debian)"
