// The process environment, copied once by main(); the planning core reads only this map.
#pragma once

#include <map>
#include <string>

namespace gj {

using EnvMap = std::map<std::string, std::string>;

}  // namespace gj
