#include "nccl_search.h"

#include <sstream>

namespace gj::nccl {
namespace {

constexpr const char* kSoname = "libnccl.so.2";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

std::string strip_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

std::vector<Candidate> plan_search(const SearchInputs& in) {
  if (in.explicit_set) return {{"GJ_NCCL_LIBRARY", in.explicit_path}};
  std::vector<Candidate> out;
  out.push_back({"the loader's search (LD_LIBRARY_PATH, ldconfig)", kSoname});
  for (const std::string& site : in.site_dirs) {
    out.push_back({"Python site folder", strip_slash(site) + "/nvidia/nccl/lib/" + kSoname});
  }
  const std::string cuda = strip_slash(in.cuda_home);
  out.push_back({"CUDA toolkit", cuda + "/lib64/" + kSoname});
  out.push_back({"CUDA toolkit", cuda + "/lib/" + kSoname});
  return out;
}

std::string version_string(int code) {
  // Before 2.9 the code was major * 1000 + minor * 100 + patch.
  const bool old = code < 10000;
  const int major = old ? code / 1000 : code / 10000;
  const int minor = old ? code % 1000 / 100 : code % 10000 / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string describe_failed_search(const std::vector<Attempt>& attempts) {
  std::string s = "no usable NCCL (libnccl.so.2 >= " + version_string(kMinNcclVersion) + ") found; tried";
  const char* sep = " ";
  for (const Attempt& a : attempts) {
    s += sep;
    s += a.candidate.where + " " + (a.candidate.file.empty() ? std::string("\"\"") : a.candidate.file) + ": " +
         a.failure;
    sep = "; ";
  }
  if (attempts.empty()) s += " nothing";
  const bool explicit_only = attempts.size() == 1 && attempts[0].candidate.where == "GJ_NCCL_LIBRARY";
  s += explicit_only ? ". Fix: point GJ_NCCL_LIBRARY at an existing libnccl.so.2 (or unset it to search)"
                     : ". Fix: pip install nvidia-nccl-cu13 (or the wheel matching your CUDA), apt install "
                       "libnccl2, or set GJ_NCCL_LIBRARY=/path/to/libnccl.so.2";
  return s;
}

std::vector<std::string> site_patterns(const std::string& pythonpath, const std::string& virtual_env,
                                       const std::string& conda_prefix, const std::string& path,
                                       const std::string& home) {
  std::vector<std::string> out = split(pythonpath, ':');
  const std::string site = "/lib/python3*/site-packages";
  if (!virtual_env.empty()) out.push_back(strip_slash(virtual_env) + site);
  if (!conda_prefix.empty()) out.push_back(strip_slash(conda_prefix) + site);
  // A venv or conda environment whose bin/ is on PATH (an activated one, or a container's).
  for (const std::string& dir : split(path, ':')) out.push_back(strip_slash(dir) + "/.." + site);
  if (!home.empty()) out.push_back(strip_slash(home) + "/.local" + site);
  out.push_back("/usr/local/lib/python3*/dist-packages");
  out.push_back("/usr/lib/python3/dist-packages");
  return out;
}

}  // namespace gj::nccl
