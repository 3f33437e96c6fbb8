#!/usr/bin/env bash
# Builds one virtual environment of scripts/pypi/pins.txt (see its header) and prints its path.
#   scripts/pypi/make-venv.sh ENV      -> ${GJ_VENV_ROOT:-/opt/gj-venvs}/ENV
# Idempotent: an environment whose recorded pins equal the file's lines is left as it is. Needs
# Debian's python3-venv (scripts/install-deps.sh installs it). Packages come from pip's own
# configuration (the machine's index); nothing here names a registry.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
env_name=${1:?usage: make-venv.sh ENV (an environment of scripts/pypi/pins.txt)}
pins="$here/pins.txt"
lines=$(awk -v e="$env_name" '$1 == e { $1 = ""; sub(/^ /, ""); print }' "$pins")
if [ -z "$lines" ]; then
  echo "make-venv.sh: no environment \"$env_name\" in $pins (it has: $(awk '!/^#/ && NF { print $1 }' "$pins" | sort -u | tr '\n' ' '))" >&2
  exit 2
fi
dir="${GJ_VENV_ROOT:-/opt/gj-venvs}/$env_name"
stamp="$dir/.gj-pins"
if [ -x "$dir/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$lines" ]; then
  echo "$dir"
  exit 0
fi

venv_args=()
grep -qx '@system-site-packages' <<<"$lines" && venv_args+=(--system-site-packages)
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
/usr/bin/python3 -m venv "${venv_args[@]}" "$dir" >&2
plain=()
no_deps=()
no_isolation=()
while read -r first rest; do
  case "$first" in
    @system-site-packages) ;;
    @no-deps) no_deps+=("$rest") ;;
    @no-build-isolation) no_isolation+=("$rest") ;;
    @*) echo "make-venv.sh: unknown option \"$first\" in $pins" >&2; exit 2 ;;
    *) plain+=("$first") ;;
  esac
done <<<"$lines"
pip=("$dir/bin/python" -m pip --disable-pip-version-check -q)
[ ${#plain[@]} -eq 0 ] || "${pip[@]}" install "${plain[@]}" >&2
[ ${#no_deps[@]} -eq 0 ] || "${pip[@]}" install --no-deps "${no_deps[@]}" >&2
for req in "${no_isolation[@]}"; do
  "${pip[@]}" install --no-build-isolation --no-binary "${req%%[=<>]*}" "$req" >&2
done
printf '%s\n' "$lines" >"$stamp"
echo "$dir"
