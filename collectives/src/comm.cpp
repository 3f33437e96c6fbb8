#include "comm.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>
#include <exception>
#include <string>

#include "cuda/device.h"
#include "env.h"
#include "error.h"
#include "log.h"
#include "mpi/host_backend.h"
#include "mpi_base/mpi_check.h"
#include "peer/monitor.h"
#ifdef GJ_HAVE_NCCL
#include "nccl/nccl_backend.h"
#endif

namespace gj {
namespace {

#ifdef GJ_HAVE_NCCL
constexpr bool kBuiltWithNccl = true;
#else
constexpr bool kBuiltWithNccl = false;
#endif

// Runs a local step on every rank of comm. When it fails on any rank, every rank throws (its
// own error, or one saying which step failed elsewhere): no rank may go on into a collective
// setup step that another rank skips, or it would wait forever.
template <class Step>
auto on_all_ranks_or_none(MPI_Comm comm, const char* what, Step&& step) -> decltype(step()) {
  decltype(step()) result{};
  std::exception_ptr failure;
  try {
    result = step();
  } catch (const Error&) {
    failure = std::current_exception();
  }
  int ok = failure ? 0 : 1;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm),
            std::string("MPI_Allreduce(agreement on ") + what + ")");
  if (failure) std::rethrow_exception(failure);
  if (ok == 0) throw Error(gjInvalidUsage, std::string(what) + " failed on another rank (its error says why)");
  return result;
}

void local_rank_and_size(gjComm& c) {
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(c.mpi, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  const int rc_rank = MPI_Comm_rank(node, &c.local_rank);
  const int rc_size = MPI_Comm_size(node, &c.local_size);
  MPI_Comm_free(&node);
  mpi_check(rc_rank, "MPI_Comm_rank(node)");
  mpi_check(rc_size, "MPI_Comm_size(node)");
}

// What decides collective setup steps (NCCL init, shared memory), as the minimum over ranks.
struct Agreed {
  int min_device_count;
  bool shm;
  bool hierarchical;
};

Agreed agree(const gjComm& c) {
  int v[3] = {kBuiltWithNccl && c.config.backend != BackendChoice::Mpi ? cuda::device_count() : 0,
              c.config.shm ? 1 : 0, c.config.hierarchical ? 1 : 0};
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MIN, c.mpi), "MPI_Allreduce(backend agreement)");
  return Agreed{v[0], v[1] != 0, v[2] != 0};
}

std::unique_ptr<shm::ShmAllreduce> make_shm(const gjComm& c, bool enabled, bool patient) {
  if (!enabled) {
    log(c.config, LogLevel::Info, c.rank, "shared-memory allreduce off (GJ_COLL_SHM=0 on some rank)");
    return nullptr;
  }
#ifdef GJ_HAVE_SHM
  std::string why_not;
  shm::ShmOptions options;
  options.timeout_ms = c.config.timeout_ms;  // a dead peer: gjTimeout instead of a hang
  options.wait = engine_wait(c.config.shm_wait, patient);
  auto shm = shm::ShmAllreduce::create(c.mpi, options, &why_not);
  if (shm) shm->watch_peers(c.live);
  if (!shm) log(c.config, LogLevel::Info, c.rank, "shared-memory allreduce not used: " + why_not);
  return shm;
#else
  (void)patient;
  log(c.config, LogLevel::Debug, c.rank, "shared-memory allreduce not built in");
  return nullptr;
#endif
}

// Ranks on several nodes: the two-level path, when every rank allows it (the same decision on
// every rank: local_size < size holds on all of them or none).
std::unique_ptr<Hierarchy> make_hierarchy(const gjComm& c, const Agreed& agreed) {
  if (c.local_size == c.size) return nullptr;
  if (!agreed.shm || !agreed.hierarchical) {
    log(c.config, LogLevel::Info, c.rank,
        std::string("hierarchical host path off (") + (agreed.shm ? "GJ_COLL_HIERARCHICAL" : "GJ_COLL_SHM") +
            "=0 on some rank)");
    return nullptr;
  }
#ifdef GJ_HAVE_SHM
  std::string why_not;
  shm::ShmOptions options;
  options.timeout_ms = c.config.timeout_ms;
  options.wait = engine_wait(c.config.shm_wait, false);
  auto hierarchy = Hierarchy::create(c.mpi, options, &why_not);
  if (!hierarchy) log(c.config, LogLevel::Info, c.rank, "hierarchical host path not used: " + why_not);
  return hierarchy;
#else
  return nullptr;
#endif
}

// The communicator's progress counters (peer/progress.h), named by its members' world ranks
// and how many communicators over the same members this process made before (the same count
// on every member: communicators are made collectively).
std::unique_ptr<peer::Progress> make_progress(MPI_Comm comm) {
  MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  mpi_check(MPI_Comm_group(comm, &mine), "MPI_Comm_group");
  mpi_check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group(MPI_COMM_WORLD)");
  int n = 0;
  MPI_Group_size(mine, &n);
  std::vector<int> local(static_cast<std::size_t>(n)), members(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) local[static_cast<std::size_t>(i)] = i;
  mpi_check(MPI_Group_translate_ranks(mine, n, local.data(), world, members.data()), "MPI_Group_translate_ranks");
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
  std::sort(members.begin(), members.end());
  static std::mutex m;
  static std::map<std::vector<int>, int> made;
  int nth = 0;
  {
    std::lock_guard<std::mutex> lock(m);
    nth = made[members]++;
  }
  return std::make_unique<peer::Progress>(std::move(members), nth);
}

// Live communicators over MPI_COMM_WORLD's ranks in this process.
std::atomic<int> g_world_comms{0};

// The rank wrapper learns this rank's world rank when the first communicator over the world
// exists (peer/monitor.h).
void note_world(gjComm& c, MPI_Comm parent) {
  int same = MPI_UNEQUAL;
  mpi_check(MPI_Comm_compare(parent, MPI_COMM_WORLD, &same), "MPI_Comm_compare(MPI_COMM_WORLD)");
  c.world = same == MPI_IDENT || same == MPI_CONGRUENT;
  if (c.world && g_world_comms.fetch_add(1) == 0) peer::hello(c.rank, c.size);
}

std::string device_path(const Config& config) {
#ifdef GJ_HAVE_NCCL
  return nccl_backend_description(config);
#else
  (void)config;
  return "NCCL";
#endif
}

// Returns whether this rank's progress thread waits patiently (patient_progress), which the
// shared-memory engine's waits follow.
bool set_up(gjComm& c, int cpus) {
  mpi_check(MPI_Comm_set_errhandler(c.mpi, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  mpi_check(MPI_Comm_rank(c.mpi, &c.rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(c.mpi, &c.size), "MPI_Comm_size");
  local_rank_and_size(c);
  c.live = peer::Liveness::create(c.mpi);
  const Agreed agreed = agree(c);
  c.plan = on_all_ranks_or_none(c.mpi, "backend choice", [&] {
    return plan_backends(c.config, BackendFacts{kBuiltWithNccl, agreed.min_device_count});
  });
#ifdef GJ_HAVE_NCCL
  // More ranks than devices on a host: said now, with the fix, not at the first CUDA tensor.
  if (c.plan.use_nccl) {
    on_all_ranks_or_none(c.mpi, "devices per host", [&] {
      check_devices_per_host(c.mpi, c.config);
      return 0;
    });
  }
#endif
  const bool patient = patient_progress(c.config.progress_wait, c.local_size, cpus);
  auto shm = make_shm(c, agreed.shm, patient);
  auto hierarchy = shm ? nullptr : make_hierarchy(c, agreed);
  const std::string host_path = shm         ? std::string("shared memory (") + shm->wait_name() + " waits) + MPI"
                                : hierarchy ? hierarchy->describe()
                                            : std::string("MPI");
  c.host = make_host_backend(c.mpi, std::move(shm), std::move(hierarchy));
  // The NCCL communicator is created at the first device collective, on its buffer's device
  // (gjComm::backend_for): scripts make their device current after init (Horovod's order).
  log(c.config, LogLevel::Info, c.rank,
      "communicator ready: size=" + std::to_string(c.size) + " local_size=" + std::to_string(c.local_size) +
          "; host buffers: " + host_path + "; device buffers: " +
          (c.plan.use_nccl ? device_path(c.config) : "unsupported, " + c.plan.no_nccl_reason));
  return patient;
}

}  // namespace

std::unique_ptr<gjComm> create_comm(MPI_Comm parent, const Config* inherit) {
  peer::start(snapshot_coll_env());  // the rank socket, if this rank has a wrapper
  auto c = std::make_unique<gjComm>();
  // The environment is per rank; a bad GJ_COLL_* value anywhere fails every rank.
  if (inherit != nullptr) c->config = *inherit;
  else c->config = on_all_ranks_or_none(parent, "GJ_COLL_* settings", [] { return parse_config(snapshot_coll_env()); });
  c->fusion_threshold = c->config.fusion_bytes;
  c->agreement = c->config.check ? gjComm::AgreementScope::All : gjComm::AgreementScope::Grouped;
  mpi_check(MPI_Comm_dup(parent, &c->mpi), "MPI_Comm_dup");
  try {
    const int cpus = cpus_of_this_process();
    const bool patient = set_up(*c, cpus);
    // No NCCL for device buffers from the start: callers may refuse them without the queue.
    if (!c->plan.use_nccl) c->device_decided.store(true, std::memory_order_release);
    mpi_check(MPI_Query_thread(&c->thread_level), "MPI_Query_thread");
    c->progress = make_progress(c->mpi);
    c->queue = std::make_unique<HostQueue>(c->mpi, *c->host, c->thread_level, patient, c->config.timeout_ms);
    c->queue->track(c->progress.get());
    c->queue->watch_peers(c->live);
    c->control = std::make_unique<ControlChannel>(c->mpi, c->config.timeout_ms);
    log(c->config, LogLevel::Info, c->rank,
        std::string("progress thread: ") + (c->queue->patient() ? "patient" : "spinning") + " waits (" +
            std::to_string(c->local_size) + " ranks on the node, " + std::to_string(cpus) + " CPUs for this rank)");
    note_world(*c, parent);
  } catch (...) {
    c->queue.reset();
    c->device.reset();
    c->host.reset();
    MPI_Comm_free(&c->mpi);
    throw;
  }
  return c;
}

void destroy_comm(std::unique_ptr<gjComm> c) {
  // The last communicator over the world: this rank issues no more collectives.
  if (c->world && g_world_comms.fetch_sub(1) == 1) peer::leave();
  c->queue.reset();  // every queued request runs first
  c->device.reset();
  c->host.reset();
  c->control.reset();
  mpi_check(MPI_Comm_free(&c->mpi), "MPI_Comm_free");
}

void abort_comm(std::unique_ptr<gjComm> c) noexcept {
  if (c->world) g_world_comms.fetch_sub(1);
  if (c->device) c->device->abort();
  if (c->host) c->host->abort();
  if (c->queue) c->queue->abort();  // queued requests fail; a running one is waited for
  if (c->control) c->control->abort();
  c->queue.reset();
  c->device.reset();
  c->host.reset();
  c->control.reset();
  // c->mpi is deliberately leaked; see comm.h.
}

}  // namespace gj

int gjComm::alltoall_device(int buffer_device, bool empty, const char* call) {
  if (!plan.use_nccl) return buffer_device;
  int kinds[2] = {!empty && buffer_device >= 0 ? 1 : 0, !empty && buffer_device < 0 ? 1 : 0};  // device, host
  gj::Work agree;
  agree.call = "alltoall buffer kind";
  queue->run_blocking(agree, [&] {
    gj::mpi_check(MPI_Allreduce(MPI_IN_PLACE, kinds, 2, MPI_INT, MPI_MAX, mpi),
                  std::string(call) + ": MPI_Allreduce(buffer kind)");
  });
  if (kinds[0] != 0 && kinds[1] != 0) {
    throw gj::Error(gjInvalidArgument, std::string(call) + ": some ranks pass device buffers and others host "
                                                           "buffers; every rank must use the same kind");
  }
  if (kinds[0] == 0) return -1;
  if (!empty) return buffer_device;
  return gj::cuda::current_device();
}

gj::Backend& gjComm::backend_for(int buffer_device, const char* call) {
#ifdef GJ_HAVE_NCCL
  if (buffer_device >= 0 && plan.use_nccl && !device) {
    // Collective: every rank's first device collective comes here, in the same call order.
    gj::Work setup;
    setup.call = "NCCL communicator setup";
    queue->run_blocking(setup, [&] { create_device_backend(buffer_device); });
  }
#endif
  return chosen_backend(buffer_device, call);
}

gj::Backend& gjComm::backend_in_queue(int buffer_device, const char* call) {
#ifdef GJ_HAVE_NCCL
  if (buffer_device >= 0 && plan.use_nccl && !device) create_device_backend(buffer_device);
#endif
  return chosen_backend(buffer_device, call);
}

void gjComm::refuse_device_buffers_if_decided(const char* call) const {
  if (device_decided.load(std::memory_order_acquire)) (void)gj::backend_for(plan, true, call);
}

gj::Backend& gjComm::chosen_backend(int buffer_device, const char* call) {
  if (gj::backend_for(plan, buffer_device >= 0, call) == gjBackendNccl) return *device;
  return *host;
}

void gjComm::create_device_backend(int buffer_device) {
#ifdef GJ_HAVE_NCCL
  try {
    device = gj::make_nccl_backend(mpi, buffer_device, config);
  } catch (const gj::Error& e) {
    // No NCCL library or no device on some rank, or two ranks on one device: every rank
    // learns it together inside make_nccl_backend, before NCCL init. Host buffers still
    // work; this and every later device buffer get the reason.
    if (e.code() != gjUnsupported || config.backend == gj::BackendChoice::Nccl) throw;
    plan.use_nccl = false;
    plan.no_nccl_reason = e.what();
    gj::log(config, gj::LogLevel::Warn, rank, std::string("device buffers: host-only, ") + e.what());
  }
  device_decided.store(true, std::memory_order_release);
#else
  (void)buffer_device;
#endif
}
