# agent.unit.layer_includes: each agent library's include path admits only the layers it may
# use (docs/architecture.md). The probes are object libraries left out of the build (see
# tests/agent/CMakeLists.txt), each compiling one #include with exactly the include directories
# its library gives; this script builds each and wants the allowed ones to compile and the
# forbidden ones to fail on that header being missing (any other failure fails the test too).
#   cmake -DBIN=<build dir> -DPROBES="target=header=ok|refused;..." -P layer_includes.cmake
set(failures "")
foreach(probe IN LISTS PROBES)
  string(REPLACE "=" ";" parts "${probe}")
  list(GET parts 0 target)
  list(GET parts 1 header)
  list(GET parts 2 want)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BIN}" --target "${target}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(want STREQUAL "ok" AND NOT rc EQUAL 0)
    list(APPEND failures "${target}: #include \"${header}\" should compile and did not:\n${out}")
  elseif(want STREQUAL "refused" AND rc EQUAL 0)
    list(APPEND failures "${target}: #include \"${header}\" compiled, but that layer may not use it")
  # GCC: "plan.h: No such file or directory"; clang: "'plan.h' file not found".
  elseif(want STREQUAL "refused" AND NOT out MATCHES "(${header}: No such file|'${header}' file not found)")
    list(APPEND failures "${target}: failed, but not for want of \"${header}\":\n${out}")
  else()
    message(STATUS "${target}: #include \"${header}\" ${want}")
  endif()
endforeach()
if(failures)
  string(JOIN "\n" text ${failures})
  message(FATAL_ERROR "${text}")
endif()
