#include "local_ranks.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace gj {
namespace {

std::string dir_of(const std::string& state_dir) { return state_dir + "/ranks"; }

std::vector<int> noted(const std::string& state_dir) {
  std::vector<int> out;
  DIR* d = ::opendir(dir_of(state_dir).c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && pid > 1) out.push_back(static_cast<int>(pid));
  }
  ::closedir(d);
  return out;
}

}  // namespace

void note_local_rank(const std::string& state_dir) {
  if (state_dir.empty()) return;
  ::mkdir(state_dir.c_str(), 0700);
  ::mkdir(dir_of(state_dir).c_str(), 0700);
  const std::string path = dir_of(state_dir) + "/" + std::to_string(::getpid());
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

void forget_local_rank(const std::string& state_dir) {
  if (state_dir.empty()) return;
  ::unlink((dir_of(state_dir) + "/" + std::to_string(::getpid())).c_str());
}

int signal_local_ranks(const std::string& state_dir) {
  int n = 0;
  for (int pid : noted(state_dir)) {
    if (::kill(pid, stop_signal()) == 0) ++n;
    else if (errno == ESRCH) ::unlink((dir_of(state_dir) + "/" + std::to_string(pid)).c_str());
  }
  return n;
}

// Alive and not a zombie: a wrapper that has exited but is not yet reaped has left.
bool running(int pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

int local_ranks_alive(const std::string& state_dir) {
  int n = 0;
  for (int pid : noted(state_dir))
    if (running(pid)) ++n;
  return n;
}

}  // namespace gj
