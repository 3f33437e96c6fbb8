// How a value from the outside (environment, command line, files) appears in a message. Every
// error or warning that shows such a value goes through here, so a value can never add a line
// to the pod log or the termination log, and a secret-looking variable's value never shows. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gj {

// Values longer than this are cut in messages (the length is shown instead of the rest).
inline constexpr std::size_t kQuotedMaxChars = 200;

// The value in double quotes, on one line: '"' and '\' escaped, \n \r \t as such, every other
// control or non-ASCII byte as \xNN; longer than kQuotedMaxChars: the first kQuotedMaxChars
// bytes then `... (N bytes)`.
std::string quoted_value(std::string_view value);  // not "quoted": std::quoted would win by ADL

// quoted_value without the quotes, for a value that is part of a name (the log prefix's pod name).
std::string escaped_value(std::string_view value);

// NAME="value" for a message; NAME=<redacted> when the name looks like it holds a secret
// (is_secret_name). `name` is ours or already validated; it is escaped all the same.
std::string quoted_setting(std::string_view name, std::string_view value);

// The escape C, JSON and our messages share for '"', '\\', newline, CR and tab ("\\n" for a
// newline, ...); nullptr for any other byte.
const char* short_escape(char c);

// `message` with every control byte escaped (\n, \r, \t, \xNN), nothing cut: the last guard
// where an error leaves the process (log line, termination log), for messages that embed
// text we did not quote (strerror, a child's output).
std::string one_line(std::string_view message);

}  // namespace gj
