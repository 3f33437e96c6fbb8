# The oldest CUDA toolkit the device path builds with, and why (one source of truth: GjCuda.cmake
# applies it, tests/gpu/toolkit_floor_test.cmake checks it, docs/gpu.md "Build" states it).
#   cudaStreamGetDevice (collectives/src/nccl: a stream of another device refused before NCCL): 12.8
#   cudaGetDriverEntryPointByVersion (collectives/src/cuda/device.cpp: context-free pointer queries): 12.5
# Older toolkits would fail to compile those calls; AUTO turns the device path off instead.
include_guard(GLOBAL)
set(GJ_CUDA_MIN_VERSION 12.8)

# out_var: "" when `version` is new enough, else a sentence naming it, the floor and why.
function(gj_cuda_toolkit_floor version out_var)
  if(version VERSION_LESS GJ_CUDA_MIN_VERSION)
    set(${out_var} "the CUDA toolkit ${version} is older than ${GJ_CUDA_MIN_VERSION}, which the device path needs "
        "(cudaStreamGetDevice: 12.8, cudaGetDriverEntryPointByVersion: 12.5); install CUDA >= ${GJ_CUDA_MIN_VERSION} "
        "and point -DCMAKE_CUDA_COMPILER at its nvcc" PARENT_SCOPE)
  else()
    set(${out_var} "" PARENT_SCOPE)
  endif()
endfunction()
