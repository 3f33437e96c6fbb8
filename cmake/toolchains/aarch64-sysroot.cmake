# The second half of aarch64-linux-gnu.cmake: a cross build against an arm64 Debian root
# (GJ_AARCH64_SYSROOT), read only from there.
set(_gj_root "${GJ_AARCH64_SYSROOT}")
if(NOT IS_DIRECTORY "${_gj_root}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "GJ_AARCH64_SYSROOT=\"${_gj_root}\" has no usr/lib/aarch64-linux-gnu: it must be "
    "an arm64 Debian root (scripts/stack/make-root.sh ROOT bookworm arm64)")
endif()
set(CMAKE_SYSROOT "${_gj_root}")
set(CMAKE_FIND_ROOT_PATH "${_gj_root}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# A path of the root with its symbolic links followed inside the root: Debian's MPI files are
# links through /etc/alternatives, absolute ones, which outside the root would name the build
# machine's files.
function(_gj_in_root var path)
  set(p "${path}")
  foreach(_gj_i RANGE 16)
    if(NOT IS_SYMLINK "${_gj_root}${p}")
      break()
    endif()
    file(READ_SYMLINK "${_gj_root}${p}" t)
    if(NOT IS_ABSOLUTE "${t}")
      get_filename_component(d "${p}" DIRECTORY)
      set(t "${d}/${t}")
    endif()
    get_filename_component(p "${t}" ABSOLUTE)
  endforeach()
  if(NOT EXISTS "${_gj_root}${p}")
    message(FATAL_ERROR "GJ_AARCH64_SYSROOT=\"${_gj_root}\": ${path} (-> ${p}) is missing there; "
      "the root needs libopenmpi-dev (or libmpich-dev) for arm64 (scripts/stack/make-root.sh installs it)")
  endif()
  set(${var} "${_gj_root}${p}" PARENT_SCOPE)
endfunction()
# The MPI settings are the project's (try_compile projects read this file too, without them).
get_property(_gj_try_compile GLOBAL PROPERTY IN_TRY_COMPILE)
# Given with -D, the MPI of the root other than its default one is taken (e.g. MPICH's:
# -DMPI_mpi_LIBRARY=ROOT/usr/lib/aarch64-linux-gnu/libmpich.so
#  -DMPI_C_COMPILER_INCLUDE_DIRS=ROOT/usr/include/aarch64-linux-gnu/mpich, the same for CXX).
if(NOT _gj_try_compile AND NOT DEFINED MPI_mpi_LIBRARY)
  _gj_in_root(_gj_mpi_library /usr/lib/aarch64-linux-gnu/libmpi.so)
  set(MPI_mpi_LIBRARY "${_gj_mpi_library}" CACHE FILEPATH "the root's MPI library")
endif()
foreach(_gj_lang C CXX)
  if(_gj_try_compile)
    break()
  endif()
  if(NOT DEFINED MPI_${_gj_lang}_COMPILER_INCLUDE_DIRS)
    _gj_in_root(_gj_mpi_include /usr/include/aarch64-linux-gnu/mpi)
    set(MPI_${_gj_lang}_COMPILER_INCLUDE_DIRS "${_gj_mpi_include}" CACHE STRING "the root's MPI headers")
  endif()
  set(MPI_${_gj_lang}_LIB_NAMES mpi CACHE STRING "the root's MPI library")
endforeach()
# The root's, as the tests see it when they run inside the root.
set(MPIEXEC_EXECUTABLE /usr/bin/mpiexec CACHE FILEPATH "mpiexec inside the root")

# Test programs run by ctest (and Catch2's discovery at build time): inside the root natively
# through binfmt_misc, on the build machine through qemu with the root's libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/aarch64-run.sh;${_gj_root}")
