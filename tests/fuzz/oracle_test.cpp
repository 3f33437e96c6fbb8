// The fuzz targets are only as good as their oracles: check the independent DNS-name oracle
// and the input decoding against the specification, case by case.
#include <catch2/catch.hpp>

#include "fuzz_check.h"

using gj::fuzz::decode_escapes;
using gj::fuzz::has_shell_or_control_char;
using gj::fuzz::is_valid_dns_name;
using gj::fuzz::parse_env_lines;
using gj::fuzz::split_lines;

TEST_CASE("DNS-name oracle accepts what RFC 1123 allows and nothing else", "[fuzz][oracle]") {
  const std::string label63(63, 'a');
  const std::string label64(64, 'a');
  // 4 labels of 63 + 3 dots = 255; trim to exactly 253 and 254.
  const std::string long253 = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');
  const std::string long254 = long253 + "c";
  struct Case {
    std::string name;
    bool valid;
  };
  const std::vector<Case> cases = {
      {"job-worker-0.job", true},
      {"a", true},
      {"0", true},
      {"A-b.C-d", true},
      {label63, true},
      {label64, false},
      {long253, true},
      {long254, false},
      {"", false},
      {"-oProxyCommand=x", false},
      {"a-.b", false},
      {"a.-b", false},
      {"a..b", false},
      {".a", false},
      {"a.", false},
      {"a;b", false},
      {"$(x)", false},
      {"`x`", false},
      {"a b", false},
      {"a\nb", false},
      {"a:4", false},
      {"a_b", false},
      {std::string("a\0b", 3), false},
  };
  for (const auto& c : cases) {
    INFO("name=" << gj::fuzz::printable(c.name));
    CHECK(is_valid_dns_name(c.name) == c.valid);
  }
}

TEST_CASE("shell/control character detector", "[fuzz][oracle]") {
  CHECK_FALSE(has_shell_or_control_char("PATH_1=/usr/bin:x,y.z-+@%^"));
  for (const std::string bad : {" ", "\"", "'", "`", "$", ";", "&", "|", "<", ">", "(", ")", "\\", "#", "\n",
                                "\r", "\t", "\x7f"}) {
    INFO("char=" << gj::fuzz::printable(bad));
    CHECK(has_shell_or_control_char("a" + bad + "b"));
  }
  CHECK(has_shell_or_control_char(std::string("a\0b", 3)));
}

TEST_CASE("escape decoding reaches every byte", "[fuzz][oracle]") {
  CHECK(decode_escapes("a\\nb") == "a\nb");
  CHECK(decode_escapes("\\x00\\xff") == std::string("\0\xff", 2));
  CHECK(decode_escapes("\\xg1") == "\\xg1");
  CHECK(decode_escapes("\\x4") == "\\x4");
  CHECK(decode_escapes("end\\") == "end\\");
  CHECK(decode_escapes("\\\\n") == "\\n");
}

TEST_CASE("env lines split at the first '=' and keep empty values", "[fuzz][oracle]") {
  CHECK(split_lines("a\n\nb") == std::vector<std::string>{"a", "", "b"});
  const auto env = parse_env_lines("A=1=2\nB\n\nC=\nD=x\\ny");
  REQUIRE(env.size() == 4);
  CHECK(env[0] == std::pair<std::string, std::string>{"A", "1=2"});
  CHECK(env[1] == std::pair<std::string, std::string>{"B", ""});
  CHECK(env[2] == std::pair<std::string, std::string>{"C", ""});
  CHECK(env[3] == std::pair<std::string, std::string>{"D", "x\ny"});
}
