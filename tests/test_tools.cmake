# What the tests of examples/ and of gj.torch share: Debian's python3 and the mpiexec line.
#   gj_debian_python3(VAR): /usr/bin/python3 first (it has the Debian packages the tests need;
#     a python3 earlier on PATH, pyenv's or conda's, may lack them), else the first on PATH.
#   gj_test_mpirun(): sets mpiexec (MPIEXEC_EXECUTABLE when FindMPI gave one) and mpirun, the
#     command line every multi-process test starts with (root in CI; 2 cores here, so up to 4
#     ranks oversubscribe).
include_guard(GLOBAL)

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
