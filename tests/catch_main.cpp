// main() and Catch2 v2's implementation for every test program (gj_catch_main, cmake/GjCatch2.cmake).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
