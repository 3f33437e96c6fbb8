#!/usr/bin/env bash
# expect.sh CODE REGEX -- COMMAND...: runs COMMAND, passes only when it exits with CODE and its
# output (stdout+stderr) matches the extended regex REGEX ("" matches anything). Unlike ctest's
# PASS_REGULAR_EXPRESSION, which ignores the exit status, this checks both.
set -uo pipefail
want_code=$1 regex=$2
shift 2
[ "${1:-}" = "--" ] && shift
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
if [ "$code" -ne "$want_code" ]; then
  echo "expect.sh: FAIL: exit code $code, want $want_code: $*" >&2
  exit 1
fi
if [ -n "$regex" ] && ! grep -Eq -- "$regex" <<<"$out"; then
  echo "expect.sh: FAIL: output does not match /$regex/: $*" >&2
  exit 1
fi
echo "expect.sh: ok (exit $code${regex:+, matched /$regex/})"
