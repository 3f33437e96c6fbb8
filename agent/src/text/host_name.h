// The one host-name rule of the project (RFC 1123): every host gj-mpirun hands to ssh or
// mpiexec, and every name its resolver looks up, passes it. Such a name can never look like an
// option or carry shell or sshd_config syntax. Pure.
#pragma once

#include <string>
#include <string_view>

namespace gj {

// Empty when `name` is a valid DNS host name (labels of 1..63 letters, digits and '-', not
// starting or ending with '-', total <= 253 characters); otherwise why not, in words that
// never repeat a control character.
std::string dns_name_problem(std::string_view name);

// dns_name_problem(name) is empty, where `name` may end in one '.' (an absolute name).
bool is_valid_host_name(std::string_view name);

}  // namespace gj
