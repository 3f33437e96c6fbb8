#!/usr/bin/env bash
# check_installed_elf.sh ROOT: every ELF file installed under ROOT loads on any machine:
#   - no RUNPATH/RPATH entry except $ORIGIN-relative ones (nothing points into the build
#     machine's folders: its build tree, /usr/local/cuda, an MPI or NCCL found there), and no
#     empty entry (which means the current directory);
#   - no NEEDED libnccl or libcudart (NCCL is opened at run time, the CUDA runtime is static).
# Prints one line per file checked; exit 1 naming each offence.
set -euo pipefail
root=$1
fail=0 n=0
while IFS= read -r -d '' f; do
  head -c4 "$f" 2>/dev/null | grep -q $'\x7fELF' || continue
  dyn=$(readelf -d "$f" 2>/dev/null || true)
  n=$((n + 1))
  while IFS= read -r path; do
    [ -n "$path" ] || continue
    IFS=: read -r -a entries <<<"$path"
    [[ $path == *: || $path == :* || $path == *::* ]] && entries+=("")
    for e in "${entries[@]}"; do
      case $e in
        '$ORIGIN'*|'${ORIGIN}'*) ;;
        *) echo "check_installed_elf.sh: FAIL: ${f#"$root"/} has RUNPATH/RPATH entry \"$e\" (a folder of the build machine; installed files may use \$ORIGIN only)" >&2; fail=1 ;;
      esac
    done
  done < <(sed -nE 's/.*\((RUNPATH|RPATH)\).*\[(.*)\]$/\2/p' <<<"$dyn")
  if grep -Eq 'NEEDED.*\[(libnccl|libcudart)' <<<"$dyn"; then
    echo "check_installed_elf.sh: FAIL: ${f#"$root"/} has $(grep -Eo '\[(libnccl|libcudart)[^]]*\]' <<<"$dyn" | tr '\n' ' ')as NEEDED (must be opened at run time / linked statically)" >&2
    fail=1
  fi
done < <(find "$root" -type f \( -path '*/bin/*' -o -path '*/lib/*' -o -path '*/lib64/*' \) -print0)
[ "$n" -gt 0 ] || { echo "check_installed_elf.sh: FAIL: no ELF file under $root" >&2; exit 1; }
[ $fail -eq 0 ] && echo "check_installed_elf.sh: ok: $n ELF files under $root: no foreign RUNPATH, no NEEDED libnccl/libcudart"
exit $fail
