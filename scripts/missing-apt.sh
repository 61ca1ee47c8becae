#!/bin/sh
# Print, space-separated, those of the Debian packages given as arguments
# that are not installed (nothing when all are).
set -eu
missing=""
for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $pkg"
done
echo "$missing"
