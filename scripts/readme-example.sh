#!/bin/sh
# Prints the fenced code block that follows the line `<!-- example:NAME -->`
# in a Markdown file, exactly as written (what a user copies); fails when
# there is none. Used by tests/c/run.sh, scripts/package.sh and
# scripts/test-dist.sh.
#
#   scripts/readme-example.sh FILE NAME
set -eu
if [ $# -ne 2 ]; then
    echo "usage: $0 FILE NAME" >&2
    exit 2
fi
block=$(awk -v marker="<!-- example:$2 -->" '
    $0 == marker { found = 1; next }
    found && !inside && /^```/ { inside = 1; next }
    inside && /^```$/ { exit }
    inside { print }
' "$1")
if [ -z "$block" ]; then
    echo "$1 has no example '$2'" >&2
    exit 1
fi
printf '%s\n' "$block"
