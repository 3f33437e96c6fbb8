# What the tests of examples/ and of gj.torch share: Debian's python3 and the mpiexec line.
#   gj_debian_python3(VAR): /usr/bin/python3 first (it has the Debian packages the tests need;
#     a python3 earlier on PATH, pyenv's or conda's, may lack them), else the first on PATH.
#   gj_test_mpirun(): sets mpiexec (MPIEXEC_EXECUTABLE when FindMPI gave one) and mpirun, the
#     command line every multi-process test starts with (root in CI; 2 cores here, so up to 4
#     ranks oversubscribe).
#   gj_discovered_labels(TARGET LABEL...): every test catch_discover_tests() found for TARGET
#     gets these labels (an area and a kind, docs/architecture.md). Not through Catch's own
#     PROPERTIES LABELS: its generated script writes the list unquoted, so "agent;unit" arrived
#     as the label `agent` and a stray property `unit`. This runs after that script, on the
#     list it defines (TARGET_TESTS).
include_guard(GLOBAL)

function(gj_discovered_labels target)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
  file(WRITE "${script}" "foreach(t IN LISTS ${target}_TESTS)\n"
                         "  set_tests_properties(\"\${t}\" PROPERTIES LABELS \"${ARGN}\")\n"
                         "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()

macro(gj_debian_python3 var)
  find_program(${var} NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  find_program(${var} NAMES python3)
endmacro()

function(gj_test_mpirun)
  if(DEFINED MPIEXEC_EXECUTABLE AND MPIEXEC_EXECUTABLE)
    set(exe "${MPIEXEC_EXECUTABLE}")
  else()
    find_program(GJ_TEST_MPIEXEC NAMES mpiexec REQUIRED)
    set(exe "${GJ_TEST_MPIEXEC}")
  endif()
  set(mpiexec "${exe}" PARENT_SCOPE)
  set(mpirun "${exe}" --allow-run-as-root --oversubscribe PARENT_SCOPE)
endfunction()
