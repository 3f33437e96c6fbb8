# gj_discovered_labels(<target> <label>...): every test catch_discover_tests found for <target>
# gets these labels (an area and a kind; docs/architecture.md). See discovered_labels.cmake.in.
function(gj_discovered_labels target)
  set(GJ_LABELS_TARGET ${target})
  set(GJ_LABELS_DIR ${CMAKE_CURRENT_BINARY_DIR})
  set(GJ_LABELS "${ARGN}")
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/discovered_labels.cmake.in ${script} @ONLY)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()
