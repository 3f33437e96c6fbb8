#include "bench_util.h"

#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "gpu/resnet50_shapes.h"

namespace gj::bench {

MpiSession::MpiSession(int* argc, char*** argv, bool want_thread_multiple) {
  // A row as soon as it is measured: mpiexec forwards rank output through a pipe, where stdout
  // would otherwise be block-buffered until the run ends (a long run on pods shows nothing).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (want_thread_multiple) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    thread_multiple = provided >= MPI_THREAD_MULTIPLE;
  } else {
    MPI_Init(argc, argv);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

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

void require_positive(std::initializer_list<std::pair<const char*, long long>> options) {
  for (const auto& [name, value] : options) {
    if (value < 1) throw std::invalid_argument(std::string("--") + name + " " + std::to_string(value) + ": must be >= 1");
  }
}

ElemType parse_type(const std::string& option, const std::string& value) {
  if (value == "f32") return {value, gjFloat32, 4};
  if (value == "bf16") return {value, gjBfloat16, 2};
  throw std::invalid_argument("--" + option + ": '" + value + "' is not one of f32, bf16");
}

std::vector<ElemType> parse_types(const std::string& option, const std::string& list) {
  std::vector<ElemType> types;
  for (const std::string& s : split_list(list)) types.push_back(parse_type(option, s));
  return types;
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string s; std::getline(in, s, ',');) out.push_back(s);
  return out;
}

float input_value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 13)); }

float sum_value(int nranks, std::size_t i) {
  return static_cast<float>(nranks * (nranks + 1) / 2 * static_cast<int>(i % 13));
}

void store(gjDataType_t t, void* buf, std::size_t i, float v) {
  if (t == gjFloat32) static_cast<float*>(buf)[i] = v;
  else static_cast<std::uint16_t*>(buf)[i] = to_bf16(v);
}

float load(gjDataType_t t, const void* buf, std::size_t i) {
  return t == gjFloat32 ? static_cast<const float*>(buf)[i] : from_bf16(static_cast<const std::uint16_t*>(buf)[i]);
}

Sweep read_sweep(const Args& args, long long default_min, long long default_max) {
  Sweep s;
  s.min_bytes = static_cast<std::size_t>(args.num("minbytes", default_min));
  s.max_bytes = static_cast<std::size_t>(args.num("maxbytes", default_max));
  s.rounds = static_cast<int>(args.num("rounds", 5));
  s.fixed_iters = static_cast<int>(args.num("iters", 0));
  if (s.min_bytes == 0 || s.max_bytes < s.min_bytes || s.rounds < 1) {
    throw std::invalid_argument("need 0 < --minbytes <= --maxbytes and --rounds >= 1");
  }
  return s;
}

long long sum_over_ranks(long long n) {
  MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return n;
}

std::string strf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

int iters_for(std::size_t bytes, int fixed) {
  return fixed > 0 ? fixed : static_cast<int>(std::clamp<std::size_t>((2u << 20) / bytes, 1, 200));
}

void VsMpiTable::header(const std::string& names, const std::string& units, const char* mpi_name) const {
  if (rank_ != 0) return;
  std::printf("#\n# %s  %10s %8s %8s %7s  %10s %8s %8s %7s  %6s\n", names.c_str(), "time", "algbw", "busbw", "#wrong",
              "time", "algbw", "busbw", "#wrong", "ratio");
  std::printf("# %s  %10s %8s %8s %7s  %10s %8s %8s %7s  %6s\n", units.c_str(), "gj (us)", "(GB/s)", "(GB/s)", "",
              mpi_name, "(GB/s)", "(GB/s)", "", "");
}

void VsMpiTable::row(const std::string& lead, double bytes, double bus_factor, const VsMpi& r) {
  worst_ratio_ = std::min(worst_ratio_, r.ratio());
  wrong_ += r.gj.wrong + r.mpi.wrong;
  if (rank_ != 0) return;
  const double alg_gj = bytes / r.gj.time / 1e9;
  const double alg_mpi = bytes / r.mpi.time / 1e9;
  std::printf("  %s  %10.2f %8.3f %8.3f %7lld  %10.2f %8.3f %8.3f %7lld  %6.2f\n", lead.c_str(), r.gj.time * 1e6,
              alg_gj, alg_gj * bus_factor, r.gj.wrong, r.mpi.time * 1e6, alg_mpi, alg_mpi * bus_factor, r.mpi.wrong,
              r.ratio());
  std::fflush(stdout);
}

void VsMpiTable::summary() const {
  if (rank_ == 0) std::printf("# lowest ratio %.2f, wrong elements %lld\n", worst_ratio_, wrong_);
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

GjComm::GjComm() {
  MPI_Comm world = MPI_COMM_WORLD;
  check(gjCommInitMpi(&comm_, &world), nullptr, "gjCommInitMpi");
}

GjComm::~GjComm() { gjCommDestroy(comm_); }

Gradients::Gradients(gjDataType_t t, std::size_t scale) : dtype(t), elem(t == gjFloat32 ? 4 : 2) {
  for (std::size_t n : resnet50_gradient_sizes()) {
    counts.push_back((n + scale - 1) / scale);
    data.emplace_back(counts.back() * elem);
  }
  for (auto& d : data) ptrs.push_back(d.data());
}

std::size_t Gradients::bytes() const {
  std::size_t b = 0;
  for (std::size_t n : counts) b += n * elem;
  return b;
}

void Gradients::fill(int rank) {
  for (std::size_t k = 0; k < data.size(); ++k) {
    for (std::size_t i = 0; i < counts[k]; ++i) store(dtype, data[k].data(), i, input_value(rank, i));
  }
}

long long Gradients::wrong(int nranks) const {
  long long bad = 0;
  for (std::size_t k = 0; k < data.size(); ++k) {
    for (std::size_t i = 0; i < counts[k]; ++i) bad += load(dtype, data[k].data(), i) != sum_value(nranks, i);
  }
  return sum_over_ranks(bad);
}

void measure_steps(std::vector<Step>& steps, Gradients& g, const MpiSession& mpi, int rounds, int iters) {
  for (Step& s : steps) {
    g.fill(mpi.rank);
    s.run();
    s.result.wrong = g.wrong(mpi.nranks);
  }
  std::vector<Measured> m(steps.size());
  best_of_rounds(rounds, m, [&](int k) {
    g.fill(mpi.rank);
    return time_batch(iters, steps[k].run);
  });
  for (std::size_t k = 0; k < steps.size(); ++k) steps[k].result.time = m[k].time;
}

}  // namespace gj::bench
