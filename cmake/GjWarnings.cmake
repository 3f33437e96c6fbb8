# gj_warnings: an INTERFACE target carrying the project's warning flags.
# Linked PRIVATE by every target we compile, so flags never leak into users' builds
# and never come from global CMAKE_CXX_FLAGS.
add_library(gj_warnings INTERFACE)
target_compile_options(gj_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
