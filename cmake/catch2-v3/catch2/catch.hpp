// <catch2/catch.hpp> over Catch2 v3, so one test source builds with v2 and v3.
// cmake/GjCatch2.cmake puts this folder on the include path only when it found v3.
// What v3 changed that the tests use:
//   - the single header became catch_all.hpp;
//   - the string matchers moved from Catch:: to Catch::Matchers::, Contains became
//     ContainsSubstring;
//   - Approx left the global namespace;
#pragma once
#include <catch2/catch_all.hpp>

#include <string>

namespace Catch {
using Matchers::EndsWith;
using Matchers::Equals;
using Matchers::StartsWith;
inline Matchers::StringContainsMatcher Contains(const std::string& needle,
                                                CaseSensitive sensitivity = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(needle, sensitivity);
}
}  // namespace Catch
using Catch::Approx;
