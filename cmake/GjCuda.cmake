# GjCuda: finds the CUDA toolkit and NCCL, honouring GJ_WITH_CUDA / GJ_WITH_NCCL (AUTO|ON|OFF).
#
# Sets (as normal variables in the including scope, and mirrored as global properties so any
# directory can ask):
#   GJ_HAVE_CUDA     ON when nvcc + the CUDA runtime were found and CUDA is enabled
#   GJ_HAVE_NCCL     ON when, in addition, nccl.h was found and NCCL is enabled
# and creates the IMPORTED target gj::nccl (nccl.h's folder only: libnccl is loaded at run time).
#
# AUTO turns a feature on when found and off with one status line saying what was missing;
# ON makes a missing piece a fatal error naming what to install or which variable to set.
# No flags are set globally: CUDA options live on the targets (see collectives/src/cuda).
#
# Include it from the top-level CMakeLists.txt (enable_language(CUDA) must run in the highest
# directory whose targets compile or link CUDA code). Including it again is a no-op.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/GjCudaFloor.cmake)

function(_gj_cuda_missing feature setting what)
  if(setting STREQUAL "ON")
    message(FATAL_ERROR "${feature}=ON but ${what}")
  endif()
  message(STATUS "gj: ${feature}=${setting}: ${what}; building without it")
endfunction()

foreach(_gj_var GJ_WITH_CUDA GJ_WITH_NCCL)
  if(NOT DEFINED ${_gj_var})
    set(${_gj_var} AUTO)
  endif()
  string(TOUPPER "${${_gj_var}}" ${_gj_var})
  if(NOT ${_gj_var} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${_gj_var}=\"${${_gj_var}}\" is not one of AUTO, ON, OFF")
  endif()
endforeach()

# A cross build (CMAKE_CROSSCOMPILING, e.g. cmake/toolchains/aarch64-linux-gnu.cmake) must not
# take this machine's CUDA toolkit or NCCL headers for the target's: AUTO is OFF there, and ON
# needs the target's toolkit named (CMAKE_CUDA_COMPILER, CUDAToolkit_ROOT, NCCL_ROOT).
if(CMAKE_CROSSCOMPILING)
  foreach(_gj_var GJ_WITH_CUDA GJ_WITH_NCCL)
    if(${_gj_var} STREQUAL "AUTO")
      set(${_gj_var} OFF)
      message(STATUS "gj: ${_gj_var}=AUTO is OFF when cross-compiling (for ${CMAKE_SYSTEM_PROCESSOR})")
    endif()
  endforeach()
endif()

set(GJ_HAVE_CUDA OFF)
set(GJ_HAVE_NCCL OFF)

# ---- CUDA ------------------------------------------------------------------------------------
if(NOT GJ_WITH_CUDA STREQUAL "OFF")
  # The toolkit usually lives in /usr/local/cuda, which is not on PATH in build images.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND NOT CMAKE_CROSSCOMPILING
     AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER AND NOT EXISTS "${CMAKE_CUDA_COMPILER}")
    _gj_cuda_missing(GJ_WITH_CUDA "${GJ_WITH_CUDA}"
      "CMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER} does not exist (give the path of nvcc)")
  elseif(NOT CMAKE_CUDA_COMPILER)
    _gj_cuda_missing(GJ_WITH_CUDA "${GJ_WITH_CUDA}"
      "no CUDA compiler found (install the CUDA toolkit or set -DCMAKE_CUDA_COMPILER=/path/to/nvcc)")
  else()
    # Ampere (80) and Hopper (90) machine code plus their PTX, so newer GPUs JIT from PTX.
    # CUDA 13 no longer accepts architectures below 75; give the list explicitly to override.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES 80 90 CACHE STRING "CUDA architectures (gj default: 80;90)")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      gj_cuda_toolkit_floor("${CUDAToolkit_VERSION}" _gj_too_old)
    endif()
    if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static)
      _gj_cuda_missing(GJ_WITH_CUDA "${GJ_WITH_CUDA}"
        "nvcc found at ${CMAKE_CUDA_COMPILER} but not the CUDA runtime library (cudart_static)")
    elseif(_gj_too_old)
      _gj_cuda_missing(GJ_WITH_CUDA "${GJ_WITH_CUDA}" "${_gj_too_old} (${CMAKE_CUDA_COMPILER})")
    else()
      # Imported targets are directory-scoped; tests/ and bench/ link the CUDA objects too.
      get_property(_gj_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
      foreach(_gj_target IN LISTS _gj_imported)
        if(_gj_target MATCHES "^(CUDA::|Threads::)")
          get_target_property(_gj_global ${_gj_target} IMPORTED_GLOBAL)
          if(NOT _gj_global)
            set_target_properties(${_gj_target} PROPERTIES IMPORTED_GLOBAL TRUE)
          endif()
        endif()
      endforeach()
      set(GJ_HAVE_CUDA ON)
      message(STATUS "gj: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}), "
                     "architectures ${CMAKE_CUDA_ARCHITECTURES}")
    endif()
  endif()
endif()

# ---- NCCL ------------------------------------------------------------------------------------
# Only nccl.h is needed to build: the library opens libnccl.so.2 with dlopen at run time
# (collectives/src/nccl/nccl_loader.h), so nothing links libnccl and nothing installed points
# into this machine's folders. NCCL_ROOT may be a prefix with include/nccl.h, e.g. the pip
# wheel's site-packages/nvidia/nccl.
if(GJ_WITH_NCCL STREQUAL "OFF")
  # nothing to do
elseif(NOT GJ_HAVE_CUDA)
  _gj_cuda_missing(GJ_WITH_NCCL "${GJ_WITH_NCCL}" "CUDA is not available (GJ_WITH_CUDA=${GJ_WITH_CUDA})")
else()
  set(_gj_nccl_hints "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "${CUDAToolkit_LIBRARY_ROOT}"
                     "${CUDAToolkit_TARGET_DIR}" /usr/local/cuda)
  find_path(GJ_NCCL_INCLUDE_DIR nccl.h
    HINTS ${_gj_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  if(NOT GJ_NCCL_INCLUDE_DIR)
    _gj_cuda_missing(GJ_WITH_NCCL "${GJ_WITH_NCCL}"
      "nccl.h not found (install NCCL's headers, or set -DNCCL_ROOT=<prefix with include/nccl.h>)")
  else()
    file(STRINGS "${GJ_NCCL_INCLUDE_DIR}/nccl.h" _gj_nccl_ver REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*"
                         "\\1.\\2.\\3" GJ_NCCL_VERSION "${_gj_nccl_ver}")
    if(GJ_NCCL_VERSION VERSION_LESS 2.18)
      # The headers must declare every function the backend calls (ncclCommSplit: 2.18). The
      # library found at run time may be older (>= 2.14, checked then).
      _gj_cuda_missing(GJ_WITH_NCCL "${GJ_WITH_NCCL}"
        "nccl.h ${GJ_NCCL_VERSION} at ${GJ_NCCL_INCLUDE_DIR} is older than 2.18 (set -DNCCL_ROOT to newer headers)")
    else()
      if(NOT TARGET gj::nccl)
        add_library(gj::nccl INTERFACE IMPORTED GLOBAL)
        set_target_properties(gj::nccl PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${GJ_NCCL_INCLUDE_DIR}")
      endif()
      set(GJ_HAVE_NCCL ON)
      message(STATUS "gj: NCCL headers ${GJ_NCCL_VERSION} (${GJ_NCCL_INCLUDE_DIR}); libnccl.so.2 is found at run time")
    endif()
  endif()
endif()

set_property(GLOBAL PROPERTY GJ_HAVE_CUDA ${GJ_HAVE_CUDA})
set_property(GLOBAL PROPERTY GJ_HAVE_NCCL ${GJ_HAVE_NCCL})
