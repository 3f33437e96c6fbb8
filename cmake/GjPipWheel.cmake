# The wheel of `pip install` (pyproject.toml sets GJ_PIP_WHEEL=ON; scikit-build-core configures
# with the wheel's staging folders as SKBUILD_*_DIR and CMAKE_INSTALL_PREFIX = its platlib, i.e.
# site-packages, and installs the component `runtime`). What changes against the CMake install:
#   - the gj package goes to <site-packages>/gj (GJ_PYTHON_INSTALL_DIR ".") with
#     libgj_collectives.so.0 inside it, recorded as a path relative to the package
#     (collectives/python/CMakeLists.txt); the library is one file (its version is its soversion:
#     a wheel has no symlinks, and the .so.0 -> .so.0.1.0 link would become a second copy);
#   - gj-mpirun goes to the wheel's scripts, which pip puts on the environment's PATH (<env>/bin);
#   - an RPATH to each non-system folder the library links from (an MPI in a conda environment or
#     under /opt is found at run time without LD_LIBRARY_PATH; the system MPI needs none);
#   - gj.tensorflow's compiled ops are built against the TensorFlow of the Python that runs pip
#     (GJ_TF_PYTHON = that Python), when it has one: collectives/python/tf_ops;
#   - no packaging/ (the Debian package and the examples under share/ belong to the CMake install).
# Tests, examples and benchmarks are off (pyproject.toml's cmake.define): the wheel holds none.
option(GJ_PIP_WHEEL "Build the wheel of pip install (set by pyproject.toml; needs scikit-build-core)" OFF)
if(NOT GJ_PIP_WHEEL)
  return()
endif()
if(NOT SKBUILD_SCRIPTS_DIR)
  message(FATAL_ERROR "GJ_PIP_WHEEL=ON is the configuration of `pip install .` (pyproject.toml), which "
    "scikit-build-core runs with SKBUILD_SCRIPTS_DIR; for an install with CMake leave GJ_PIP_WHEEL OFF "
    "(docs/packaging.md)")
endif()
if(NOT GJ_BUILD_AGENT OR NOT GJ_BUILD_LIBRARY)
  message(FATAL_ERROR "GJ_PIP_WHEEL=ON needs GJ_BUILD_AGENT=ON and GJ_BUILD_LIBRARY=ON: the wheel is "
    "gj-mpirun and the gj package with its library")
endif()
set(GJ_PYTHON_INSTALL_DIR ".")
set(CMAKE_INSTALL_BINDIR "${SKBUILD_SCRIPTS_DIR}")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
if(NOT DEFINED CACHE{GJ_TF_PYTHON} AND Python_EXECUTABLE)
  set(GJ_TF_PYTHON "${Python_EXECUTABLE}" CACHE FILEPATH "The Python whose TensorFlow builds gj.tensorflow's compiled ops")
endif()
