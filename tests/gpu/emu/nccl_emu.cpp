// The test NCCL: a libnccl.so.2 over the emulated device runtime (cuda_emu.h), loaded by the
// library through GJ_NCCL_LIBRARY like the real one. It models what the NCCL backend relies on
// (docs/gpu.md, "Emulation"):
// - Ranks are processes. ncclGetUniqueId starts a hub in the calling process (as NCCL's
//   bootstrap root does) listening on a loopback TCP port that the id carries; every rank's
//   communicator connects to it. Collectives and grouped ncclSend/ncclRecv move real bytes:
//   each rank's stream task sends its inputs to the hub and writes what comes back into device
//   memory, so a rank that never calls leaves its peers' stream work pending (a stalled peer).
// - Init is a rendezvous of all ranks that refuses two ranks on one device (same node, same PCI
//   bus id) with ncclInvalidUsage, unless the version (GJ_EMU_NCCL_VERSION, default 22809) is
//   >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1.
// - Nonblocking communicators (config.blocking = 0): init, finalize and every collective that
//   needs a new connection (the first of each collective kind, the first send/recv with each
//   peer: a new algorithm or peer connection) return ncclInProgress; ncclCommGetAsyncError
//   reports progress. A call on a communicator still ncclInProgress is refused
//   (ncclInvalidUsage) and poisons it, as the real library does. An argument error of a call on
//   a nonblocking communicator also becomes its asynchronous error, as the real library records it.
// - Arguments are checked as NCCL does: comm, dtype, op, root/peer in range, buffers device
//   memory of the communicator's device (ncclInvalidArgument).
// - A peer that disconnects without finalizing is an asynchronous ncclRemoteError on the others;
//   ncclCommAbort ends the communicator's pending stream work as soon as it runs, and returns
//   only when that work has drained from the streams (a stream stalled before it keeps the
//   abort waiting, as with the real NCCL).
// Not modelled: ncclCommSplit, ncclRedOpCreatePreMulSum (ncclInvalidUsage), fp8 types.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "cuda_emu.h"

namespace {

constexpr char kMagic[8] = "gjemunc";

int version() {
  const char* v = std::getenv("GJ_EMU_NCCL_VERSION");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 22809;
}

bool multi_rank_gpu_allowed() {
  const char* v = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  return version() >= 23000 && v != nullptr && std::strcmp(v, "1") == 0;
}

thread_local std::string t_last_error;

void set_error(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  t_last_error = buf;
}

// ---- framing ---------------------------------------------------------------------------------
enum MsgType : std::uint32_t { kHello = 1, kInitOk, kInitFail, kGroup, kGroupDone, kFailed, kBye };

bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool send_msg(int fd, std::uint32_t type, const std::vector<char>& body) {
  const std::uint64_t hdr[2] = {type, body.size()};
  return write_all(fd, hdr, sizeof hdr) && (body.empty() || write_all(fd, body.data(), body.size()));
}

// Reads n bytes; abort_flag (may be null) is checked every 10 ms. false on EOF, error or abort.
bool read_all(int fd, void* p, std::size_t n, const std::atomic<bool>* abort_flag) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int r = ::poll(&pfd, 1, 10);
    if (abort_flag != nullptr && abort_flag->load()) return false;
    if (r < 0) return false;
    if (r == 0) continue;
    const ssize_t got = ::recv(fd, c, n, 0);
    if (got <= 0) return false;
    c += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool recv_msg(int fd, std::uint32_t* type, std::vector<char>* body, const std::atomic<bool>* abort_flag) {
  std::uint64_t hdr[2];
  if (!read_all(fd, hdr, sizeof hdr, abort_flag)) return false;
  *type = static_cast<std::uint32_t>(hdr[0]);
  body->resize(hdr[1]);
  return hdr[1] == 0 || read_all(fd, body->data(), hdr[1], abort_flag);
}

struct Writer {
  std::vector<char> b;
  template <typename T>
  void put(const T& v) {
    const char* c = reinterpret_cast<const char*>(&v);
    b.insert(b.end(), c, c + sizeof v);
  }
  void bytes(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    b.insert(b.end(), c, c + n);
  }
};

struct Reader {
  const std::vector<char>& b;
  std::size_t at = 0;
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::vector<char> bytes(std::size_t n) {
    std::vector<char> out(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    return out;
  }
};

// ---- operations --------------------------------------------------------------------------------
enum Kind : std::uint8_t { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kSend, kRecv };
const char* kind_name(int k) {
  static const char* names[] = {"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather",
                                "ncclReduceScatter", "ncclSend", "ncclRecv"};
  return names[k];
}

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

template <typename T>
T combine_int(T a, T b, int op) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case ncclSum: case ncclAvg: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case ncclProd: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case ncclMax: return a > b ? a : b;
    default: return a < b ? a : b;
  }
}
double combine_fp(double a, double b, int op) {
  switch (op) {
    case ncclSum: case ncclAvg: return a + b;
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    default: return a < b ? a : b;
  }
}

template <typename T>
void reduce_int(std::vector<char>& acc, const std::vector<char>& in, int op, int nranks, bool last) {
  auto* a = reinterpret_cast<T*>(acc.data());
  const auto* b = reinterpret_cast<const T*>(in.data());
  const std::size_t n = acc.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) a[i] = combine_int(a[i], b[i], op);
  if (last && op == ncclAvg)
    for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] / static_cast<T>(nranks));
}

template <typename T, typename ToF, typename FromF>
void reduce_fp(std::vector<char>& acc, const std::vector<char>& in, int op, int nranks, bool last, ToF to, FromF from) {
  auto* a = reinterpret_cast<T*>(acc.data());
  const auto* b = reinterpret_cast<const T*>(in.data());
  const std::size_t n = acc.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    double v = combine_fp(to(a[i]), to(b[i]), op);
    if (last && op == ncclAvg) v /= nranks;
    a[i] = from(v);
  }
}

// acc = acc (op) in, element-wise; `last`: apply ncclAvg's division.
void reduce_into(std::vector<char>& acc, const std::vector<char>& in, ncclDataType_t t, int op, int nranks, bool last) {
  switch (t) {
    case ncclInt8: return reduce_int<std::int8_t>(acc, in, op, nranks, last);
    case ncclUint8: return reduce_int<std::uint8_t>(acc, in, op, nranks, last);
    case ncclInt32: return reduce_int<std::int32_t>(acc, in, op, nranks, last);
    case ncclUint32: return reduce_int<std::uint32_t>(acc, in, op, nranks, last);
    case ncclInt64: return reduce_int<std::int64_t>(acc, in, op, nranks, last);
    case ncclUint64: return reduce_int<std::uint64_t>(acc, in, op, nranks, last);
    case ncclFloat32:
      return reduce_fp<float>(acc, in, op, nranks, last, [](float x) { return double(x); },
                              [](double v) { return static_cast<float>(v); });
    case ncclFloat64:
      return reduce_fp<double>(acc, in, op, nranks, last, [](double x) { return x; }, [](double v) { return v; });
    case ncclFloat16:
      return reduce_fp<__half>(acc, in, op, nranks, last, [](__half x) { return double(__half2float(x)); },
                               [](double v) { return __float2half_rn(static_cast<float>(v)); });
    case ncclBfloat16:
      return reduce_fp<__nv_bfloat16>(acc, in, op, nranks, last,
                                      [](__nv_bfloat16 x) { return double(__bfloat162float(x)); },
                                      [](double v) { return __float2bfloat16_rn(static_cast<float>(v)); });
    default: return;
  }
}

struct Item {
  std::uint8_t kind = 0;
  std::int32_t dtype = 0;
  std::int32_t op = 0;
  std::int32_t root = 0;  // root, or peer for send/recv
  std::uint64_t count = 0;
  std::vector<char> data;  // what this rank contributes
};

// ---- the hub -----------------------------------------------------------------------------------
class Hub {
 public:
  explicit Hub(int listen_fd) : listen_fd_(listen_fd) {
    std::thread([this] { accept_loop(); }).detach();
  }

 private:
  struct Group {
    int rank;
    std::vector<Item> items;
    std::vector<std::vector<char>> out;  // per item
    std::size_t remaining;
  };
  struct Pending {  // one item waiting for its peers
    std::shared_ptr<Group> group;
    std::size_t index;
  };

  void accept_loop() {
    for (;;) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      // A reply is a header write and a body write: without this, Nagle holds the body until
      // the peer's delayed ACK (about 40 ms on loopback) on every collective.
      const int one = 1;
      (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::thread([this, fd] { serve(fd); }).detach();
    }
  }

  void serve(int fd) {
    std::uint32_t type = 0;
    std::vector<char> body;
    if (!recv_msg(fd, &type, &body, nullptr) || type != kHello) {
      ::close(fd);
      return;
    }
    Reader r{body};
    const int rank = r.get<int>();
    const int nranks = r.get<int>();
    const int node = r.get<int>();
    const auto bus = r.get<std::array<char, 16>>();
    {
      std::unique_lock<std::mutex> lock(m_);
      if (nranks_ == 0) {
        nranks_ = nranks;
        fds_.assign(static_cast<std::size_t>(nranks), -1);
        where_.resize(static_cast<std::size_t>(nranks));
        collectives_.resize(static_cast<std::size_t>(nranks));
      }
      if (nranks != nranks_ || rank < 0 || rank >= nranks_ || fds_[static_cast<std::size_t>(rank)] != -1) {
        Writer w;
        const std::string text = "ranks disagree on nranks or a rank joined twice";
        w.bytes(text.data(), text.size());
        send_msg(fd, kInitFail, w.b);
        ::close(fd);
        return;
      }
      fds_[static_cast<std::size_t>(rank)] = fd;
      where_[static_cast<std::size_t>(rank)] = {node, std::string(bus.data())};
      if (++joined_ == nranks_) {
        std::string refusal;
        for (int a = 0; a < nranks_ && refusal.empty(); ++a)
          for (int b = a + 1; b < nranks_ && refusal.empty(); ++b)
            if (where_[static_cast<std::size_t>(a)] == where_[static_cast<std::size_t>(b)] && !multi_rank_gpu_allowed())
              refusal = "Duplicate GPU detected : rank " + std::to_string(b) + " and rank " + std::to_string(a) +
                        " both on CUDA device " + where_[static_cast<std::size_t>(a)].second;
        for (int fd_r : fds_) {
          Writer w;
          w.bytes(refusal.data(), refusal.size());
          send_msg(fd_r, refusal.empty() ? kInitOk : kInitFail, w.b);
        }
      }
    }
    for (;;) {
      if (!recv_msg(fd, &type, &body, nullptr)) {
        peer_lost(rank);
        return;
      }
      if (type == kBye) return;
      if (type == kGroup) submit(rank, body);
    }
  }

  void peer_lost(int rank) {
    std::lock_guard<std::mutex> lock(m_);
    if (!failure_.empty()) return;
    failure_ = "rank " + std::to_string(rank) + " disconnected without finalizing (a peer process failed)";
    Writer w;
    w.put(static_cast<int>(ncclRemoteError));
    w.bytes(failure_.data(), failure_.size());
    for (std::size_t r = 0; r < fds_.size(); ++r)
      if (static_cast<int>(r) != rank) send_msg(fds_[r], kFailed, w.b);
  }

  void submit(int rank, const std::vector<char>& body) {
    Reader r{body};
    auto g = std::make_shared<Group>();
    g->rank = rank;
    const auto n = r.get<std::uint32_t>();
    for (std::uint32_t i = 0; i < n; ++i) {
      Item it;
      it.kind = r.get<std::uint8_t>();
      it.dtype = r.get<std::int32_t>();
      it.op = r.get<std::int32_t>();
      it.root = r.get<std::int32_t>();
      it.count = r.get<std::uint64_t>();
      it.data = r.bytes(r.get<std::uint64_t>());
      g->items.push_back(std::move(it));
    }
    g->out.resize(g->items.size());
    g->remaining = g->items.size();
    std::lock_guard<std::mutex> lock(m_);
    if (!failure_.empty()) {
      Writer w;
      w.put(static_cast<int>(ncclRemoteError));
      w.bytes(failure_.data(), failure_.size());
      send_msg(fds_[static_cast<std::size_t>(rank)], kFailed, w.b);
      return;
    }
    for (std::size_t i = 0; i < g->items.size(); ++i) {
      const Item& it = g->items[i];
      if (it.kind == kSend) sends_[{rank, it.root}].push_back({g, i});
      else if (it.kind == kRecv) recvs_[{it.root, rank}].push_back({g, i});
      else collectives_[static_cast<std::size_t>(rank)].push_back({g, i});
    }
    if (g->items.empty()) finish(*g);
    progress();
  }

  void done(Pending& p) {
    if (--p.group->remaining == 0) finish(*p.group);
  }

  void finish(Group& g) {
    Writer w;
    w.put(static_cast<std::uint32_t>(g.out.size()));
    for (const auto& o : g.out) {
      w.put(static_cast<std::uint64_t>(o.size()));
      w.bytes(o.data(), o.size());
    }
    send_msg(fds_[static_cast<std::size_t>(g.rank)], kGroupDone, w.b);
  }

  void progress() {
    for (auto& [pair, sends] : sends_) {
      auto& recvs = recvs_[pair];
      while (!sends.empty() && !recvs.empty()) {
        Pending s = sends.front(), r = recvs.front();
        sends.pop_front();
        recvs.pop_front();
        r.group->out[r.index] = s.group->items[s.index].data;
        done(s);
        done(r);
      }
    }
    for (;;) {
      for (const auto& q : collectives_)
        if (q.empty()) return;
      std::vector<Pending> heads;
      for (auto& q : collectives_) {
        heads.push_back(q.front());
        q.pop_front();
      }
      run_collective(heads);
      for (Pending& p : heads) done(p);
    }
  }

  void run_collective(std::vector<Pending>& heads) {
    const Item& first = heads[0].group->items[heads[0].index];
    const auto t = static_cast<ncclDataType_t>(first.dtype);
    const std::size_t es = type_size(t);
    const int n = nranks_;
    auto item = [&](int r) -> const Item& { return heads[static_cast<std::size_t>(r)].group->items[heads[static_cast<std::size_t>(r)].index]; };
    auto out = [&](int r) -> std::vector<char>& { return heads[static_cast<std::size_t>(r)].group->out[heads[static_cast<std::size_t>(r)].index]; };
    for (int r = 1; r < n; ++r) {
      const Item& o = item(r);
      if (o.kind != first.kind || o.count != first.count || o.dtype != first.dtype || o.op != first.op || o.root != first.root) {
        // Real NCCL would hang or corrupt memory: the emulation says so instead.
        std::fprintf(stderr, "gj emulated NCCL: rank %d called %s(count=%llu) while rank 0 called %s(count=%llu)\n", r,
                     kind_name(o.kind), static_cast<unsigned long long>(o.count), kind_name(first.kind),
                     static_cast<unsigned long long>(first.count));
        std::abort();
      }
    }
    switch (first.kind) {
      case kAllReduce:
      case kReduce: {
        std::vector<char> acc = item(0).data;
        for (int r = 1; r < n; ++r) reduce_into(acc, item(r).data, t, first.op, n, r == n - 1);
        for (int r = 0; r < n; ++r)
          if (first.kind == kAllReduce || r == first.root) out(r) = acc;
        break;
      }
      case kBroadcast:
        for (int r = 0; r < n; ++r) out(r) = item(first.root).data;
        break;
      case kAllGather: {
        std::vector<char> all;
        for (int r = 0; r < n; ++r) all.insert(all.end(), item(r).data.begin(), item(r).data.end());
        for (int r = 0; r < n; ++r) out(r) = all;
        break;
      }
      case kReduceScatter: {
        std::vector<char> acc = item(0).data;
        for (int r = 1; r < n; ++r) reduce_into(acc, item(r).data, t, first.op, n, r == n - 1);
        const std::size_t chunk = first.count * es;
        for (int r = 0; r < n; ++r)
          out(r).assign(acc.begin() + static_cast<std::ptrdiff_t>(chunk * r), acc.begin() + static_cast<std::ptrdiff_t>(chunk * (r + 1)));
        break;
      }
      default: break;
    }
  }

  int listen_fd_;
  std::mutex m_;
  int nranks_ = 0;
  int joined_ = 0;
  std::vector<int> fds_;
  std::vector<std::pair<int, std::string>> where_;
  std::vector<std::deque<Pending>> collectives_;
  std::map<std::pair<int, int>, std::deque<Pending>> sends_, recvs_;  // (from, to)
  std::string failure_;
};

struct IdBody {
  char magic[8];
  std::uint16_t port;
};

// ---- communicators -----------------------------------------------------------------------------
}  // namespace
struct ncclComm;
namespace {
struct PendingOp {
  ncclComm* comm;
  Item item;
  const void* send;
  void* recv;
  cudaStream_t stream;
};

}  // namespace

struct ncclComm {
  int rank = 0;
  int nranks = 1;
  int device = 0;
  bool blocking = true;
  int fd = -1;
  std::atomic<int> async{ncclSuccess};
  std::atomic<bool> aborted{false};
  std::atomic<bool> finalized{false};
  std::set<int> connected;  // collective kinds and send/recv peers already connected
  std::mutex io;
  std::mutex m;
  std::condition_variable cv;
  int inflight = 0;
  std::string error;
  std::vector<std::thread> helpers;
};

namespace {

thread_local int t_group_depth = 0;
thread_local std::vector<PendingOp> t_group_ops;
thread_local ncclResult_t t_group_error = ncclSuccess;

std::mutex g_comms_mutex;
std::vector<ncclComm*> g_comms;

bool known(ncclComm* c) {
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  for (ncclComm* k : g_comms)
    if (k == c) return true;
  return false;
}

void comm_fail(ncclComm* c, ncclResult_t r, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(c->m);
    c->error = why;
  }
  int expected = ncclSuccess;
  if (!c->async.compare_exchange_strong(expected, r)) {
    expected = ncclInProgress;
    c->async.compare_exchange_strong(expected, r);
  }
}

ncclResult_t connect_and_join(ncclComm* c, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    comm_fail(c, ncclSystemError, "bootstrap: cannot connect to the root rank's port " + std::to_string(port));
    return ncclSystemError;
  }
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->fd = fd;
  Writer w;
  w.put(c->rank);
  w.put(c->nranks);
  w.put(gjemu::node());
  std::array<char, 16> bus{};
  std::snprintf(bus.data(), bus.size(), "%s", gjemu::pci_bus_id(c->device).c_str());
  w.put(bus);
  std::uint32_t type = 0;
  std::vector<char> body;
  if (!send_msg(fd, kHello, w.b) || !recv_msg(fd, &type, &body, &c->aborted)) {
    comm_fail(c, ncclSystemError, "bootstrap: the root rank closed the connection during init");
    return ncclSystemError;
  }
  if (type != kInitOk) {
    comm_fail(c, ncclInvalidUsage, std::string(body.begin(), body.end()));
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

// The stream task of one group of operations of one communicator.
void run_group(ncclComm* c, const std::vector<PendingOp>& ops) {
  const int state = c->async.load();
  if (c->aborted.load() || (state != ncclSuccess && state != ncclInProgress)) return;
  Writer w;
  w.put(static_cast<std::uint32_t>(ops.size()));
  for (const PendingOp& op : ops) {
    const Item& it = op.item;
    w.put(it.kind);
    w.put(it.dtype);
    w.put(it.op);
    w.put(it.root);
    w.put(it.count);
    std::size_t bytes = it.count * type_size(static_cast<ncclDataType_t>(it.dtype));
    const bool contributes = it.kind != kRecv && (it.kind != kBroadcast || c->rank == it.root);
    if (it.kind == kReduceScatter) bytes *= static_cast<std::size_t>(c->nranks);
    if (!contributes) bytes = 0;
    w.put(static_cast<std::uint64_t>(bytes));
    w.bytes(op.send, bytes);
  }
  std::lock_guard<std::mutex> lock(c->io);
  std::uint32_t type = 0;
  std::vector<char> body;
  if (!send_msg(c->fd, kGroup, w.b) || !recv_msg(c->fd, &type, &body, &c->aborted)) {
    if (!c->aborted.load()) comm_fail(c, ncclRemoteError, "the connection to the root rank was lost");
    return;
  }
  if (type == kFailed) {
    Reader r{body};
    const int code = r.get<int>();
    const auto text = r.bytes(body.size() - sizeof(int));
    comm_fail(c, static_cast<ncclResult_t>(code), std::string(text.begin(), text.end()));
    return;
  }
  Reader r{body};
  const auto n = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < n && i < ops.size(); ++i) {
    const auto bytes = r.get<std::uint64_t>();
    const auto data = r.bytes(bytes);
    if (bytes > 0 && ops[i].recv != nullptr) std::memcpy(ops[i].recv, data.data(), bytes);
  }
}

// Enqueues the group's stream task (on the communicator's device, as the real NCCL does). The
// caller counted it in c->inflight (from the call on, so finalize and destroy wait for it).
// own_thread: called on the test NCCL's own helper thread, which (like NCCL's internal threads)
// only ever uses the communicator's device: switching "back" to the thread's default device 0
// would create a context there that no real NCCL creates.
cudaError_t enqueue_task(ncclComm* c, cudaStream_t stream, std::vector<PendingOp> ops, bool own_thread = false) {
  int previous = 0;
  (void)cudaGetDevice(&previous);
  if (own_thread) previous = c->device;
  if (previous != c->device) (void)cudaSetDevice(c->device);
  const cudaError_t e = gjemu::launch(stream, [c, ops = std::move(ops)] {
    run_group(c, ops);
    std::lock_guard<std::mutex> lock(c->m);
    --c->inflight;
    c->cv.notify_all();
  }, "nccl group");
  if (previous != c->device) (void)cudaSetDevice(previous);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    std::lock_guard<std::mutex> lock(c->m);
    --c->inflight;
    c->cv.notify_all();
  }
  return e;
}

ncclResult_t launch_group(ncclComm* c, std::vector<PendingOp> ops) {
  cudaStream_t stream = ops.front().stream;
  for (const PendingOp& op : ops) {
    if (op.stream != stream) {
      set_error("the emulated NCCL runs a group of one communicator on one stream only");
      return ncclInvalidUsage;
    }
  }
  bool connects = false;
  for (const PendingOp& op : ops) {
    const int key = op.item.kind >= kSend ? 100 + op.item.root : op.item.kind;
    connects = c->connected.insert(key).second || connects;
  }
  if (!c->blocking && connects) {
    int expected = ncclSuccess;
    if (c->async.compare_exchange_strong(expected, ncclInProgress)) {
      {
        std::lock_guard<std::mutex> lock(c->m);
        ++c->inflight;
      }
      // Connection setup (a new collective kind or peer) on a nonblocking communicator: the call returns
      // ncclInProgress before the operation is on the stream, which it reaches only when the
      // state turns to ncclSuccess. A caller that records an event or enqueues the next kernel
      // before polling ncclCommGetAsyncError out of ncclInProgress orders it before the
      // collective (with the real NCCL too), and the tests see it.
      c->helpers.emplace_back([c, stream, ops = std::move(ops)]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        (void)cudaSetDevice(c->device);
        const cudaError_t e = enqueue_task(c, stream, std::move(ops), true);
        if (e != cudaSuccess) {
          comm_fail(c, ncclUnhandledCudaError, std::string("Cuda failure '") + cudaGetErrorString(e) +
                                                   "' enqueuing the first collective on its stream");
          return;
        }
        int in_progress = ncclInProgress;
        c->async.compare_exchange_strong(in_progress, ncclSuccess);
      });
      return ncclInProgress;
    }
  }
  {
    std::lock_guard<std::mutex> lock(c->m);
    ++c->inflight;
  }
  const cudaError_t e = enqueue_task(c, stream, std::move(ops));
  if (e != cudaSuccess) {
    set_error("Cuda failure '%s' enqueuing on the stream (a stream of another device than the communicator's?)",
              cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

ncclResult_t argument_error(ncclComm* c, ncclResult_t r) {
  // A nonblocking communicator records the error of a call as its asynchronous error.
  if (c != nullptr && !c->blocking) comm_fail(c, r, t_last_error);
  if (t_group_depth > 0) t_group_error = r;
  return r;
}

bool on_device(ncclComm* c, const void* p, const char* name, const char* call) {
  const int d = gjemu::device_of(p);
  if (d == c->device) return true;
  set_error("%s : %s %p is %s, not memory of the communicator's CUDA device %d", call, name, p,
            d < 0 ? "not device memory" : ("memory of device " + std::to_string(d)).c_str(), c->device);
  return false;
}

// The stream of the latest collective or send/recv call accepted (gjemu_nccl_last_stream): a test
// asks which stream communication ran on.
std::atomic<cudaStream_t> g_last_stream{nullptr};

ncclResult_t enqueue(Item item, const void* send, void* recv, ncclComm* c, cudaStream_t stream) {
  const char* call = kind_name(item.kind);
  g_last_stream.store(stream);
  if (c == nullptr || !known(c) || c->aborted.load()) {
    set_error("%s : invalid communicator", call);
    return ncclInvalidArgument;
  }
  if (c->async.load() == ncclInProgress) {
    set_error("%s : the communicator is still ncclInProgress (poll ncclCommGetAsyncError until it is ncclSuccess "
              "before the next call)", call);
    comm_fail(c, ncclInvalidUsage, t_last_error);
    if (t_group_depth > 0) t_group_error = ncclInvalidUsage;
    return ncclInvalidUsage;
  }
  if (c->async.load() != ncclSuccess) {
    set_error("%s : the communicator has an asynchronous error: %s", call, c->error.c_str());
    return static_cast<ncclResult_t>(c->async.load());
  }
  if (type_size(static_cast<ncclDataType_t>(item.dtype)) == 0) {
    set_error("%s : invalid type %d", call, item.dtype);
    return argument_error(c, ncclInvalidArgument);
  }
  if (item.op < 0 || item.op >= ncclNumOps) {
    set_error("%s : invalid reduction operation %d", call, item.op);
    return argument_error(c, ncclInvalidArgument);
  }
  const bool rooted = item.kind == kBroadcast || item.kind == kReduce || item.kind == kSend || item.kind == kRecv;
  if (rooted && (item.root < 0 || item.root >= c->nranks)) {
    set_error("%s : invalid %s %d (nranks=%d)", call, item.kind >= kSend ? "peer" : "root", item.root, c->nranks);
    return argument_error(c, ncclInvalidArgument);
  }
  if (item.count > 0) {
    const bool needs_send = item.kind != kRecv && (item.kind != kBroadcast || c->rank == item.root);
    const bool needs_recv = item.kind != kSend && (item.kind != kReduce || c->rank == item.root);
    if ((needs_send && !on_device(c, send, "sendbuff", call)) || (needs_recv && !on_device(c, recv, "recvbuff", call)))
      return argument_error(c, ncclInvalidArgument);
  }
  if (item.kind == kReduce && c->rank != item.root) recv = nullptr;
  PendingOp op{c, std::move(item), send, recv, stream};
  if (t_group_depth > 0) {
    t_group_ops.push_back(std::move(op));
    return ncclSuccess;
  }
  std::vector<PendingOp> ops;
  ops.push_back(std::move(op));
  return launch_group(c, std::move(ops));
}

Item make_item(Kind k, size_t count, ncclDataType_t t, int op, int root) {
  Item it;
  it.kind = k;
  it.count = count;
  it.dtype = t;
  it.op = op;
  it.root = root;
  return it;
}

void wait_idle(ncclComm* c) {
  std::unique_lock<std::mutex> lock(c->m);
  c->cv.wait(lock, [&] { return c->inflight == 0; });
}

void release(ncclComm* c) {
  {
    std::lock_guard<std::mutex> lock(g_comms_mutex);
    for (auto it = g_comms.begin(); it != g_comms.end(); ++it)
      if (*it == c) {
        g_comms.erase(it);
        break;
      }
  }
  for (std::thread& t : c->helpers)
    if (t.joinable()) t.join();
  if (c->fd >= 0) ::close(c->fd);
  delete c;
}

}  // namespace

extern "C" {

// Not NCCL's: the stream the latest NCCL operation was called with (the per-stream record a test
// reads through dlsym on this library; absent from a real NCCL).
cudaStream_t gjemu_nccl_last_stream() { return g_last_stream.load(); }

ncclResult_t ncclGetVersion(int* v) {
  *v = version();
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  if (comm != nullptr && known(comm) && comm->async.load() != ncclSuccess && comm->async.load() != ncclInProgress) {
    thread_local std::string copy;
    std::lock_guard<std::mutex> lock(comm->m);
    copy = comm->error;
    return copy.c_str();
  }
  return t_last_error.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    set_error("bootstrap: cannot listen on a loopback port: %s", std::strerror(errno));
    return ncclSystemError;
  }
  new Hub(fd);  // lives as long as the process, as NCCL's bootstrap root thread
  std::memset(id, 0, sizeof *id);
  IdBody body{};
  std::memcpy(body.magic, kMagic, sizeof kMagic);
  body.port = ntohs(a.sin_port);
  std::memcpy(id->internal, &body, sizeof body);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  IdBody body{};
  std::memcpy(&body, id.internal, sizeof body);
  if (std::memcmp(body.magic, kMagic, sizeof kMagic) != 0) {
    set_error("ncclCommInitRank : the unique id was not made by ncclGetUniqueId");
    return ncclInvalidArgument;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    set_error("ncclCommInitRank : rank %d nranks %d", rank, nranks);
    return ncclInvalidArgument;
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    set_error("ncclCommInitRank : no CUDA device");
    return ncclUnhandledCudaError;
  }
  auto* c = new ncclComm;
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  c->blocking = config == nullptr || config->blocking != 0;
  {
    std::lock_guard<std::mutex> lock(g_comms_mutex);
    g_comms.push_back(c);
  }
  *out = c;
  if (c->blocking) {
    const ncclResult_t r = connect_and_join(c, body.port);
    if (r != ncclSuccess) t_last_error = c->error;
    return r;
  }
  c->async = ncclInProgress;
  c->helpers.emplace_back([c, port = body.port] {
    if (connect_and_join(c, port) == ncclSuccess) {
      int expected = ncclInProgress;
      c->async.compare_exchange_strong(expected, ncclSuccess);
    }
  });
  return ncclInProgress;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (comm == nullptr || !known(comm)) return ncclInvalidArgument;
  *state = static_cast<ncclResult_t>(comm->async.load());
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr || !known(comm)) return ncclInvalidArgument;
  auto bye = [comm] {
    wait_idle(comm);
    if (comm->fd >= 0) {
      std::lock_guard<std::mutex> lock(comm->io);
      (void)send_msg(comm->fd, kBye, {});
    }
    comm->finalized = true;
  };
  if (comm->blocking) {
    bye();
    return ncclSuccess;
  }
  int expected = ncclSuccess;
  if (!comm->async.compare_exchange_strong(expected, ncclInProgress)) {
    if (expected != ncclInProgress) return static_cast<ncclResult_t>(expected);
    set_error("ncclCommFinalize : the communicator is still ncclInProgress");
    comm_fail(comm, ncclInvalidUsage, t_last_error);
    return ncclInvalidUsage;
  }
  comm->helpers.emplace_back([comm, bye] {
    bye();
    int in_progress = ncclInProgress;
    comm->async.compare_exchange_strong(in_progress, ncclSuccess);
  });
  return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr || !known(comm)) return ncclInvalidArgument;
  wait_idle(comm);
  release(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr || !known(comm)) return ncclSuccess;
  // Like NCCL's abort flag: the communicator's stream work, running or still queued behind other
  // work, ends as soon as it runs, without waiting for peers. Its memory is never freed, since
  // queued stream work still refers to it.
  comm->aborted = true;
  if (comm->fd >= 0) ::shutdown(comm->fd, SHUT_RDWR);
  // The real ncclCommAbort returns once the communicator's kernels have left the streams: work
  // queued behind a stalled kernel keeps it waiting.
  wait_idle(comm);
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  for (auto it = g_comms.begin(); it != g_comms.end(); ++it)
    if (*it == comm) {
      g_comms.erase(it);
      break;
    }
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->nranks;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  *device = comm->device;
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*) {
  set_error("ncclCommSplit is not emulated");
  return ncclInvalidUsage;
}
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t) {
  set_error("ncclRedOpCreatePreMulSum is not emulated");
  return ncclInvalidUsage;
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t) { return ncclInvalidArgument; }

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return enqueue(make_item(kAllReduce, count, t, op, 0), send, recv, comm, stream);
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return enqueue(make_item(kBroadcast, count, t, ncclSum, root), send, recv, comm, stream);
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return enqueue(make_item(kReduce, count, t, op, root), send, recv, comm, stream);
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream) {
  return enqueue(make_item(kAllGather, count, t, ncclSum, 0), send, recv, comm, stream);
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return enqueue(make_item(kReduceScatter, count, t, op, 0), send, recv, comm, stream);
}
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return enqueue(make_item(kSend, count, t, ncclSum, peer), send, nullptr, comm, stream);
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(make_item(kRecv, count, t, ncclSum, peer), nullptr, recv, comm, stream);
}

ncclResult_t ncclGroupStart() {
  if (t_group_depth++ == 0) t_group_error = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (t_group_depth == 0) {
    set_error("ncclGroupEnd: not in a group");
    return ncclInvalidUsage;
  }
  if (--t_group_depth > 0) return ncclSuccess;
  std::vector<PendingOp> ops;
  ops.swap(t_group_ops);
  if (t_group_error != ncclSuccess) return t_group_error;  // nothing of a failed group runs
  // One task per communicator, its operations in call order.
  std::vector<ncclComm*> order;
  std::map<ncclComm*, std::vector<PendingOp>> by_comm;
  for (PendingOp& op : ops) {
    if (by_comm.count(op.comm) == 0) order.push_back(op.comm);
    by_comm[op.comm].push_back(std::move(op));
  }
  ncclResult_t result = ncclSuccess;
  for (ncclComm* c : order) {
    const ncclResult_t r = launch_group(c, std::move(by_comm[c]));
    if (r != ncclSuccess && result == ncclSuccess) result = r;
    if (r != ncclSuccess && r != ncclInProgress) result = r;
  }
  return result;
}

}  // extern "C"
