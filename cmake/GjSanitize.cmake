# Sanitizer and fuzzing build support.
#
# gj_sanitize: an INTERFACE target that every library and test links PRIVATE, like gj_warnings.
# It always exists, so callers need no if(GJ_SANITIZE) guard; it is empty unless GJ_SANITIZE=ON,
# then it carries -fsanitize=address,undefined for compile and link. A static library passes the
# link half on to whatever links it ($<LINK_ONLY:...>), so executables linking a sanitized
# library get the runtime without naming gj_sanitize themselves.
#
# gj_link_fully_static(<exe>): the release gj-mpirun is one fully static binary, but ASan's
# runtime cannot be linked statically, so in a sanitized build the agent binary is linked
# dynamically (and sanitized with everything else): its process tests then run under ASan too.
#
# GJ_FUZZ=ON (clang only) adds -fsanitize=fuzzer-no-link to gj_sanitize so libFuzzer gets
# coverage feedback from inside the libraries, not only from the fuzz target's own file.
include_guard(GLOBAL)

if(NOT DEFINED GJ_SANITIZE)
  option(GJ_SANITIZE "Build libraries and tests with ASan+UBSan (the static agent stays unsanitized)" OFF)
endif()
if(NOT DEFINED GJ_FUZZ)
  option(GJ_FUZZ "Build libFuzzer targets (needs clang)" OFF)
endif()

if(GJ_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "GJ_FUZZ=ON needs clang (libFuzzer); CMAKE_CXX_COMPILER_ID is "
    "'${CMAKE_CXX_COMPILER_ID}'. Configure with CC=clang CXX=clang++ or set GJ_FUZZ=OFF.")
endif()
if(GJ_FUZZ AND NOT GJ_SANITIZE)
  # Fuzzing without ASan/UBSan only finds crashes; the point is to find silent memory errors.
  message(STATUS "GJ_FUZZ=ON implies GJ_SANITIZE=ON")
  set(GJ_SANITIZE ON CACHE BOOL "" FORCE)
endif()

set(GJ_SANITIZER_FLAGS
  -fsanitize=address,undefined
  -fno-omit-frame-pointer
  -fno-sanitize-recover=undefined)

if(NOT TARGET gj_sanitize)
  add_library(gj_sanitize INTERFACE)
  if(GJ_SANITIZE)
    target_compile_options(gj_sanitize INTERFACE
      $<$<COMPILE_LANGUAGE:C,CXX>:${GJ_SANITIZER_FLAGS}>)
    target_link_options(gj_sanitize INTERFACE -fsanitize=address,undefined)
    if(GJ_FUZZ)
      target_compile_options(gj_sanitize INTERFACE
        $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
    endif()
  endif()
endif()

# For tests and libraries: one call instead of a guarded target_link_libraries.
function(gj_sanitize_target tgt)
  target_link_libraries(${tgt} PRIVATE gj_sanitize)
endfunction()

# For the gj-mpirun executable only: -static in normal builds; dynamic and sanitized under
# GJ_SANITIZE (a sanitized library cannot be linked into a static binary).
function(gj_link_fully_static tgt)
  if(GJ_SANITIZE)
    target_link_libraries(${tgt} PRIVATE gj_sanitize)
  else()
    target_link_options(${tgt} PRIVATE -static)
  endif()
endfunction()

# One call at the end of the top-level CMakeLists.txt instead of a line per target: under
# GJ_SANITIZE, every library and executable defined in this project (not imported ones) links
# gj_sanitize, and an executable linked with -static (gj-mpirun) is linked dynamically. Does
# nothing when GJ_SANITIZE is OFF, so the release build is untouched.
function(gj_sanitize_all_targets)
  if(NOT GJ_SANITIZE)
    return()
  endif()
  set(dirs "${CMAKE_SOURCE_DIR}")
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(tgt IN LISTS targets)
      get_target_property(type ${tgt} TYPE)
      if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
        continue()
      endif()
      get_target_property(link_opts ${tgt} LINK_OPTIONS)
      if(link_opts AND "-static" IN_LIST link_opts)
        list(REMOVE_ITEM link_opts -static)
        set_target_properties(${tgt} PROPERTIES LINK_OPTIONS "${link_opts}")
      endif()
      # Direct options rather than target_link_libraries(): works whatever signature the
      # owner used for the target, and a static library's consumers get the runtime anyway
      # because every executable here gets the link flag.
      target_compile_options(${tgt} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:${GJ_SANITIZER_FLAGS}>)
      if(GJ_FUZZ)
        target_compile_options(${tgt} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
      endif()
      target_link_options(${tgt} PRIVATE -fsanitize=address,undefined)
    endforeach()
  endwhile()
endfunction()
