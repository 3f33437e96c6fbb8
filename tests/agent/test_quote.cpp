// How outside values appear in messages (quote.h): one line, escaped, capped, secrets hidden.
#include <catch2/catch.hpp>

#include <string>

#include "quote.h"

TEST_CASE("quoted_value escapes quotes, backslashes and every control byte") {
  struct Row {
    std::string value;
    std::string shown;
  };
  const Row rows[] = {
      {"", "\"\""},
      {"plain-value_1.2", "\"plain-value_1.2\""},
      {"a\nERROR forged line", "\"a\\nERROR forged line\""},
      {"a\r\tb", "\"a\\r\\tb\""},
      {std::string("a\0b", 3), "\"a\\x00b\""},
      {"\x1b[2J\x7f", "\"\\x1b[2J\\x7f\""},
      {"say \"hi\" \\", "\"say \\\"hi\\\" \\\\\""},
      {"caf\xc3\xa9", "\"caf\\xc3\\xa9\""},
  };
  for (const auto& row : rows) {
    CAPTURE(row.value);
    CHECK(gj::quoted_value(row.value) == row.shown);
  }
}

TEST_CASE("quoted_value caps absurdly long values and gives their length") {
  const std::string huge(1'000'000, 'x');
  const std::string shown = gj::quoted_value(huge);
  CHECK(shown == "\"" + std::string(gj::kQuotedMaxChars, 'x') + "\"... (1000000 bytes)");
  const std::string exact(gj::kQuotedMaxChars, 'y');
  CHECK(gj::quoted_value(exact) == "\"" + exact + "\"");
  // The cap counts input bytes, so escaping cannot push a newline past it either.
  const std::string newlines(gj::kQuotedMaxChars + 1, '\n');
  CHECK(gj::quoted_value(newlines).find('\n') == std::string::npos);
}

TEST_CASE("quoted_setting never shows a secret-looking variable's value") {
  struct Row {
    std::string name;
    std::string value;
    std::string shown;
  };
  const Row rows[] = {
      {"GJ_MPI", "lam\nmpi", "GJ_MPI=\"lam\\nmpi\""},
      {"MY_API_TOKEN", "hunter2", "MY_API_TOKEN=<redacted>"},
      {"db_password", "hunter2", "db_password=<redacted>"},
      {"bad-name_SECRET", "hunter2", "bad-name_SECRET=<redacted>"},
      {"A\nB", "v", "A\\nB=\"v\""},
  };
  for (const auto& row : rows) {
    CAPTURE(row.name);
    CHECK(gj::quoted_setting(row.name, row.value) == row.shown);
  }
}

TEST_CASE("one_line escapes control bytes only and keeps the whole message") {
  CHECK(gj::one_line("open \"/x\" failed: No such file") == "open \"/x\" failed: No such file");
  CHECK(gj::one_line("sshd said: bad\r\nline 2\t.") == "sshd said: bad\\r\\nline 2\\t.");
  CHECK(gj::one_line("caf\xc3\xa9") == "caf\xc3\xa9");
  const std::string long_message(100'000, 'm');
  CHECK(gj::one_line(long_message) == long_message);
}
