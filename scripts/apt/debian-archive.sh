#!/usr/bin/env bash
# scripts/apt/debian-archive.sh: prints the URI of the Debian archive this machine's own apt
# configuration uses (the source of the release it runs, e.g. "http://mirror.example/debian/"),
# for the scripts that fetch another suite's packages from the same place (scripts/stack/
# make-root.sh: trixie; scripts/gpu/download-debs.sh: bullseye). The project names no archive of
# its own: packages come from wherever this machine's apt is pointed (a mirror, a proxy, a
# snapshot). GJ_DEBIAN_ARCHIVE overrides it. Exit 2 with one line naming the fix when apt has
# no source for this release.
set -euo pipefail
if [ -n "${GJ_DEBIAN_ARCHIVE:-}" ]; then
  echo "$GJ_DEBIAN_ARCHIVE"
  exit 0
fi
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
# apt's own view of its sources (sources.list and sources.list.d, one-line and deb822 alike):
# "<suite> <uri>" for every Packages index `apt-get update` fetches.
uri=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 'Created-By: Packages' 2>/dev/null \
        | awk -v c="$codename" '$1 == c { print $2; exit }')
if [ -z "$codename" ] || [ -z "$uri" ]; then
  echo "debian-archive.sh: this machine's apt has no source for its release '${codename:-?}' (apt-get indextargets);" \
       "set GJ_DEBIAN_ARCHIVE to the Debian archive's URI" >&2
  exit 2
fi
echo "$uri"
