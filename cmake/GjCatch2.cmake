# Catch2 for the test suite: v2 (Debian 12) or v3 (Debian 13, current Ubuntu and Fedora).
# The tests are written against v2's single header <catch2/catch.hpp>; with v3 the folder
# cmake/catch2-v3 provides that header over v3's headers (see the header for what it maps).
# Included by the top-level CMakeLists.txt before any test directory, so the imported
# Catch2:: targets and catch_discover_tests() are visible to every directory below.
#   GJ_CATCH2_MAJOR  2 or 3, the version found
include_guard(GLOBAL)

find_package(Catch2 3 CONFIG QUIET)
if(Catch2_FOUND)
  set(GJ_CATCH2_MAJOR 3)
  # Catch2::Catch2WithMain links Catch2::Catch2, so both carry the compatibility header.
  set_property(TARGET Catch2::Catch2 APPEND PROPERTY
    INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_LIST_DIR}/catch2-v3")
else()
  find_package(Catch2 2 CONFIG)
  if(NOT Catch2_FOUND)
    message(FATAL_ERROR "GJ_BUILD_TESTS=ON needs Catch2 v2 or v3 (Debian: apt-get install catch2; "
      "or configure with -DGJ_BUILD_TESTS=OFF)")
  endif()
  set(GJ_CATCH2_MAJOR 2)
endif()
# Every test program links gj_catch_main: main() and Catch's implementation, compiled once per
# build (each test program compiled them itself before: 20 s apiece, 7 times, the biggest objects
# of the Release build). v3 ships them compiled (Catch2::Catch2WithMain); for v2 one object of
# our own, not v2's prebuilt libCatch2WithMain.a, which is the build machine's architecture and
# so cannot link into a cross build (scripts/ci/arm64-agent.sh).
if(GJ_CATCH2_MAJOR EQUAL 3)
  add_library(gj_catch_main INTERFACE)
  target_link_libraries(gj_catch_main INTERFACE Catch2::Catch2WithMain)
else()
  add_library(gj_catch_main STATIC "${PROJECT_SOURCE_DIR}/tests/catch_main.cpp")
  target_link_libraries(gj_catch_main PUBLIC Catch2::Catch2)
endif()
message(STATUS "Catch2 ${Catch2_VERSION} (v${GJ_CATCH2_MAJOR}) for the tests")
include(Catch)
