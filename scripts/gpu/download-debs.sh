#!/usr/bin/env bash
# scripts/gpu/download-debs.sh [DIR]: run HERE (Debian 12, network to the Debian mirror), not on
# the GPU machine. Downloads (apt-get download: no install, no root needed) the Debian packages
# the GPU build needs and the GPU machine lacks: Open MPI (runtime, tools, headers) with the
# runtime libraries it loads, Catch2, and for the agent fmt, spdlog and CLI11. Into DIR
# (default build-gpu-debs/, ignored by git), which then travels to the device with the working
# tree (`device` tool, carry=["build-gpu-debs"]); scripts/gpu/device-check.sh unpacks it there.
# Prints the total size: carried folders and the working tree share 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-gpu-debs}

# Runtime packages, with their dependency closure (below) minus what every Linux system (and
# the CUDA images the GPU machine runs) has: libc, libstdc++, zlib, ssl, pam, X11, ...
wanted=(openmpi-bin openmpi-common libopenmpi3 libfmt9 libspdlog1.10)
# Headers (and the libmpi.so link), without their dependencies: those are compilers and other
# -dev packages the build does not use.
headers=(libopenmpi-dev catch2 libfmt-dev libspdlog-dev libcli11-dev)
# libudev1 is not skipped: hwloc (Open MPI's topology) needs it, and minimal CUDA images lack it.
# Assumed present, or not needed to run mpiexec on one node (hwloc's X11/OpenCL plugins,
# ssh: mpiexec starts no remote daemons there).
skip='^(libc6|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|zlib1g|libzstd1|tar|dpkg|debconf|cdebconf|adduser|passwd|'
skip+='install-info|libpam.*|libaudit.*|libselinux1|libsemanage.*|libsepol2|libcrypt1|libbz2-1\.0|liblzma5|'
skip+='libmd0|libbsd0|libtinfo6|readline-common|libreadline8|libssl3|libuuid1|libcap-ng0|'
skip+='libpcre2-8-0|libcom-err2|libkeyutils1|libkrb5.*|libk5crypto3|libgssapi-krb5-2|libdebian-installer4|'
skip+='libnewt0\.52|libslang2|libtextwrap1|libedit2|libcbor0\.8|libfido2-1|openssh-client|libx11.*|libxcb1|'
skip+='libxau6|libxdmcp6|libxext6|libxnvctrl0|libicu[0-9]+|libxml2|ocl-icd-libopencl1|libhwloc-plugins|'
skip+='perl.*|libperl.*|libgdbm.*|libdb5\.3|libfabric-dev|libhwloc-dev|libevent-dev|libibverbs-dev|libpmix-dev|'
skip+='libnuma-dev|libltdl-dev|libjs-.*|libopenmpi-dev-.*|gfortran.*|libgfortran.*|libquadmath0|'
skip+='libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt-dev|libnsl-dev|libtirpc.*|rpcsvc-proto|'
skip+='.*-doc|libstdc\+\+-.*-dev|libgcc-.*-dev|g\+\+.*|gcc.*|cpp.*|binutils.*|libbinutils|libctf.*|libgprofng0|'
skip+='libjansson4|libsframe1|libasan8|libtsan2|liblsan0|libubsan1|libitm1|libhwasan0|libcc1-0|libgomp1|libisl23|'
skip+='libmpc3|libmpfr6|libgmp10|libstdc\+\+6-.*|libexpat1|libelf1|libncurses.*|libncursesw6)$'

closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
            --no-replaces --no-enhances "${wanted[@]}" 2>/dev/null | grep -E '^[a-z0-9]' | sort -u)
pkgs="$(grep -Ev "$skip" <<<"$closure" | tr '\n' ' ') ${headers[*]}"

rm -rf "$dir"
mkdir -p "$dir"
( cd "$dir" && apt-get download $pkgs >download.log 2>&1 ) || { cat "$dir/download.log"; exit 1; }
rm -f "$dir/download.log"
# Debian 12's libevent needs glibc 2.36; a GPU image on an older glibc (Ubuntu 20.04: 2.31) gets
# Debian 11's build of the same sonames (built against glibc 2.31), unpacked over it by
# device-check.sh only there. Fetched from the archive this machine's apt uses, with a private
# apt state.
compat=(libevent-core-2.1-7 libevent-pthreads-2.1-7)
apt_dir=$(mktemp -d)
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dir/compat"
: >"$apt_dir/status"
archive=$(scripts/apt/debian-archive.sh)  # this machine's apt source (GJ_DEBIAN_ARCHIVE overrides)
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $archive bullseye main" >"$apt_dir/sources.list"
apt_compat=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -o Dir::State::status="$apt_dir/status")
if ! { apt-get "${apt_compat[@]}" update && ( cd "$dir/compat" && apt-get "${apt_compat[@]}" download "${compat[@]}" ); } \
     >"$apt_dir/log" 2>&1; then
  cat "$apt_dir/log"; echo "download-debs.sh: FAIL: Debian 11's ${compat[*]} (for glibc < 2.36)" >&2; exit 1
fi
rm -rf "$apt_dir"
# What was downloaded, for the device script and for the record.
( cd "$dir" && ls -1 ./*.deb | sed 's|^\./||' ) >"$dir/PACKAGES"  # compat/ is separate
arch=$(dpkg --print-architecture)
echo "$arch" >"$dir/ARCH"
n=$(wc -l <"$dir/PACKAGES")
size=$(du -sb "$dir" | cut -f1)
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
echo "download-debs.sh: $n packages ($arch) in $dir: $((size / 1024)) KiB; tracked working tree: $((tree / 1024)) KiB;" \
     "together $(((size + tree) / 1024)) KiB of the 65536 KiB the device tool carries"
[ $((size + tree)) -lt $((64 * 1024 * 1024)) ] || { echo "download-debs.sh: FAIL: over 64 MiB" >&2; exit 1; }
