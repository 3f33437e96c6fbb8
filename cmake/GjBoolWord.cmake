# gj_bool_word: the boolean rule of every GJ_* variable (collectives/src/common/bool_word.h),
# header-only. The library and the agent both use it, so it is defined at the top level: the
# agent builds without the library (GJ_BUILD_LIBRARY=OFF) too.
include_guard(GLOBAL)
add_library(gj_bool_word INTERFACE)
target_include_directories(gj_bool_word INTERFACE "${PROJECT_SOURCE_DIR}/collectives/src/common")
target_compile_features(gj_bool_word INTERFACE cxx_std_17)
