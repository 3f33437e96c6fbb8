#include "bench_util.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace gj::bench {

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + a + "' (options are --name [value])");
    a = a.substr(2);
    if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) kv_.emplace_back(a, argv[++i]);
    else kv_.emplace_back(a, "");
  }
}

std::string Args::str(const std::string& name, const std::string& def) const {
  known_.push_back(name);
  for (const auto& [k, v] : kv_) {
    if (k == name) return v;
  }
  return def;
}

long long Args::num(const std::string& name, long long def) const {
  const std::string v = str(name, "");
  if (v.empty()) return def;
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  const std::string suffix = end;
  if (suffix == "K") n <<= 10;
  else if (suffix == "M") n <<= 20;
  else if (suffix == "G") n <<= 30;
  else if (!suffix.empty() || end == v.c_str()) {
    throw std::invalid_argument("--" + name + " " + v + ": not a number (suffixes K, M, G allowed)");
  }
  return n;
}

bool Args::flag(const std::string& name) const {
  known_.push_back(name);
  for (const auto& kv : kv_) {
    if (kv.first == name) return true;
  }
  return false;
}

void Args::reject_unknown() const {
  for (const auto& kv : kv_) {
    bool found = false;
    for (const auto& k : known_) found = found || k == kv.first;
    if (!found) throw std::invalid_argument("unknown option --" + kv.first);
  }
}

std::string machine_line() {
  char date[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  std::string cpu = "unknown";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return std::string("date=") + date + " host=" + host + " nproc=" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) +
         " cpu=\"" + cpu + "\"";
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float from_bf16(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

namespace {
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = to_bf16(from_bf16(a[i]) + from_bf16(b[i]));
}
}  // namespace

Bf16Mpi::Bf16Mpi() {
  MPI_Type_contiguous(2, MPI_BYTE, &type);
  MPI_Type_commit(&type);
  MPI_Op_create(bf16_sum, 1, &sum);
}

Bf16Mpi::~Bf16Mpi() {
  MPI_Op_free(&sum);
  MPI_Type_free(&type);
}

void check(gjResult_t r, gjComm_t comm, const char* call) {
  if (r == gjSuccess) return;
  std::fprintf(stderr, "%s failed: %s: %s\n", call, gjGetErrorString(r), gjGetLastError(comm));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace gj::bench
