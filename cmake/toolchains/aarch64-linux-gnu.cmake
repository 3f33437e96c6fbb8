# Cross-compiling for 64-bit Arm Linux (arm64, aarch64) with Debian's cross toolchain
# (apt-get install g++-aarch64-linux-gnu), in one of two ways:
#
# 1. Without a sysroot: gj-mpirun alone (docs/packaging.md, "Arm"; CI: scripts/ci/arm64-agent.sh)
#      cmake -S . -B build-arm64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake -DGJ_BUILD_LIBRARY=OFF
#    Headers and libraries come from the target's folder (/usr/aarch64-linux-gnu) and from
#    multiarch arm64 packages (lib/aarch64-linux-gnu); programs run at build time are the host's.
#    The header-only dependencies of the agent (CLI11, fmt, spdlog) are found in the host's
#    /usr/include as for a native build: they carry no machine code. The top-level CMakeLists.txt
#    keeps host CUDA, NCCL and MPI out of such a build.
#
# 2. Against an arm64 Debian root as sysroot: everything, the library, its tests and gj.torch
#    (scripts/stack/arm64-tests.sh)
#      cmake -S . -B build-arm64-cross --toolchain cmake/toolchains/aarch64-linux-gnu.cmake \
#            -DGJ_AARCH64_SYSROOT=/var/tmp/gj-stack/bookworm-arm64
#    (or the environment variable GJ_AARCH64_SYSROOT). The root (scripts/stack/make-root.sh ROOT
#    bookworm arm64) supplies the target's headers, libraries and CMake package configs (Open MPI,
#    fmt, spdlog, CLI11, Catch2); MPI is the root's default one (its alternatives), given to FindMPI
#    directly because its compiler wrappers are arm64 programs. The build tree is meant to be
#    tested inside the root (scripts/stack/enter.sh, qemu-user through binfmt_misc), where
#    /usr/bin/mpiexec and /usr/bin/python3 are the root's.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT GJ_AARCH64_SYSROOT AND DEFINED ENV{GJ_AARCH64_SYSROOT})
  set(GJ_AARCH64_SYSROOT "$ENV{GJ_AARCH64_SYSROOT}")
endif()
# try_compile projects read this file again: they need the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GJ_AARCH64_SYSROOT)

find_program(GJ_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)

if(NOT GJ_AARCH64_SYSROOT)
  set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
  # fmt and spdlog are used header-only (agent/CMakeLists.txt) and CLI11 is header-only: the build
  # machine's Debian packages serve, but their CMake configs sit in its multiarch folder, which a
  # search for the target's (lib/aarch64-linux-gnu) does not look in. Libraries are still found
  # only for the target (MODE_LIBRARY ONLY).
  execute_process(COMMAND dpkg-architecture -qDEB_BUILD_MULTIARCH
    OUTPUT_VARIABLE _gj_build_multiarch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  foreach(_gj_pkg fmt spdlog)
    if(_gj_build_multiarch AND NOT DEFINED ${_gj_pkg}_DIR
       AND EXISTS "/usr/lib/${_gj_build_multiarch}/cmake/${_gj_pkg}")
      set(${_gj_pkg}_DIR "/usr/lib/${_gj_build_multiarch}/cmake/${_gj_pkg}" CACHE PATH "header-only use")
    endif()
  endforeach()

  # ctest runs the target's test programs through qemu (qemu-user-static, binfmt not needed).
  if(GJ_QEMU_AARCH64)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${GJ_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu")
  endif()
else()
  include("${CMAKE_CURRENT_LIST_DIR}/aarch64-sysroot.cmake")
endif()
