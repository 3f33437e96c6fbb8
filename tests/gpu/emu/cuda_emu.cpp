// The emulated CUDA runtime: the runtime API functions the library and its tests call, defined
// over host memory and host threads, with the rules of the real runtime that the backend relies
// on (docs/gpu.md, "Emulation"):
// - GJ_EMU_DEVICES devices per process (default 2; CUDA_VISIBLE_DEVICES=-1 hides them all), a
//   current device per thread (default 0), each device a PCI bus id unique per emulated node.
// - Device memory: cudaMalloc'ed host memory, known to cudaPointerGetAttributes with its device;
//   other host memory is cudaMemoryTypeUnregistered, cudaHostAlloc'ed memory cudaMemoryTypeHost.
// - Streams are ordered queues, each run by its own thread; the legacy stream per device; events
//   record a position in a stream and complete when the stream has run past it.
// - Capture: per stream, with the capture modes of the thread that began it. A potentially unsafe
//   call (cudaMalloc, cudaFree, cudaEventQuery, cudaEventSynchronize, cudaStreamSynchronize,
//   cudaDeviceSynchronize, synchronous cudaMemcpy/cudaMemset) from a thread whose capture mode
//   prohibits it fails with cudaErrorStreamCaptureUnsupported and invalidates the captures that
//   prohibit it: a thread in global mode is prohibited while any thread captures in global mode,
//   a thread in thread-local mode while it captures itself, a relaxed thread never. Querying the
//   legacy stream while a blocking stream of its device captures is cudaErrorStreamCaptureImplicit.
// - The legacy stream synchronizes with the blocking streams of its device: work enqueued there
//   waits for every blocking stream's earlier work, and work enqueued on a blocking stream waits
//   for the legacy stream's earlier work (non-blocking streams are exempt).
// - Contexts: a call that needs one creates the primary context of the calling thread's current
//   device (cudaSetDevice creates the new device's; pointer queries, allocations, streams,
//   events, launches, copies and synchronizations the current device's); cudaGetDevice,
//   cudaGetDeviceCount, device attribute/property/PCI queries and the last-error calls do not.
//   The driver's context-free queries (cuDevicePrimaryCtxGetState, cuPointerGetAttribute) are
//   offered through cudaGetDriverEntryPointByVersion and create none.
// - Device memory is limited per device (GJ_EMU_DEVICE_MEMORY bytes, default 8 GiB): cudaMalloc
//   and cudaMallocAsync fail with cudaErrorMemoryAllocation while other allocations hold it.
//   cudaFree synchronizes every stream of the device first; cudaFreeAsync frees in stream order.
// - Every failed call sets the thread's last error (cudaGetLastError returns and clears it),
//   cudaErrorNotReady from a stream or event query included, as the real runtime records it.
// - cudaStreamQuery of a capturing stream is a prohibited call (cudaErrorStreamCaptureUnsupported,
//   the capture invalidated).
#include "cuda_emu.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
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

namespace {

struct Task {
  std::function<void()> work;
};

struct Capture;

struct Stream {
  int device = 0;
  bool nonblocking = false;
  bool legacy = false;
  std::mutex m;
  std::condition_variable cv;
  std::deque<Task> queue;
  unsigned long long enqueued = 0;   // tasks ever enqueued
  unsigned long long completed = 0;  // tasks ever completed
  bool running = false;
  bool stop = false;
  bool destroyed = false;  // guarded by g_mutex: its handle is invalid, its work still runs
  std::set<const Stream*> waited_for;  // guarded by g_mutex: streams whose events it waited on
  std::thread worker;
  Capture* capture = nullptr;  // guarded by g_mutex

  void start() {
    worker = std::thread([this] { run(); });
  }
  void run() {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty() && stop) return;
      Task t = std::move(queue.front());
      queue.pop_front();
      running = true;
      lock.unlock();
      t.work();
      lock.lock();
      running = false;
      ++completed;
      cv.notify_all();
    }
  }
  unsigned long long push(Task t) {
    std::lock_guard<std::mutex> lock(m);
    queue.push_back(std::move(t));
    cv.notify_all();
    return ++enqueued;
  }
  void wait_for(unsigned long long position) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return completed >= position; });
  }
  bool reached(unsigned long long position) {
    std::lock_guard<std::mutex> lock(m);
    return completed >= position;
  }
  unsigned long long position() {
    std::lock_guard<std::mutex> lock(m);
    return enqueued;
  }
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
      cv.notify_all();
    }
    if (worker.joinable()) worker.join();
  }
};

struct Capture {
  Stream* stream;
  cudaStreamCaptureMode mode;
  std::thread::id thread;
  bool invalidated = false;
  std::vector<Task> nodes;
};

struct Graph {
  std::vector<Task> nodes;
};

struct Event {
  int device = 0;
  Stream* stream = nullptr;  // where it was last recorded (nullptr: never: complete)
  unsigned long long position = 0;
  bool captured = false;     // last recorded during a capture
};

struct Allocation {
  std::size_t bytes;
  int device;  // -1: cudaHostAlloc'ed (pinned host memory)
};

std::mutex g_mutex;  // everything below
std::map<const char*, Allocation> g_memory;
std::set<Stream*> g_streams;
std::set<Event*> g_events;
std::vector<Capture*> g_captures;
std::vector<Stream*> g_legacy;  // per device, created on first use

std::set<int> g_contexts;      // devices whose primary context exists
std::map<int, std::size_t> g_used;  // device -> bytes allocated

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;
thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The installed driver's CUDA version (GJ_EMU_DRIVER_VERSION, default: this runtime's). Older
// than CUDART_VERSION: the runtime cannot use it (cudaErrorInsufficientDriver from every call
// that initializes it), while another runtime in the process (torch's cu12 build) still
// allocates device memory through that driver (gjemu::foreign_alloc, the driver library).
int driver_version() {
  static const int v = [] {
    const char* e = std::getenv("GJ_EMU_DRIVER_VERSION");
    return e != nullptr && *e != '\0' ? std::atoi(e) : CUDART_VERSION;
  }();
  return v;
}

bool driver_too_old() { return driver_version() < CUDART_VERSION; }

int device_count() {
  static const int n = [] {
    if (driver_too_old()) return 0;
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (visible != nullptr && (std::strcmp(visible, "-1") == 0 || *visible == '\0')) return 0;
    return std::max(0, env_int("GJ_EMU_DEVICES", 2));
  }();
  return n;
}

cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

// The primary context of the current device, created by a call that needs one. Caller holds g_mutex.
void need_context() {
  if (device_count() > 0) g_contexts.insert(t_device);
}

std::size_t device_memory() {
  static const std::size_t bytes = [] {
    const char* v = std::getenv("GJ_EMU_DEVICE_MEMORY");
    return v != nullptr && *v != '\0' ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : std::size_t{8} << 30;
  }();
  return bytes;
}

// Caller holds g_mutex.
Stream* legacy_stream(int device) {
  if (g_legacy.empty()) g_legacy.assign(static_cast<std::size_t>(std::max(1, device_count())), nullptr);
  Stream*& s = g_legacy[static_cast<std::size_t>(device)];
  if (s == nullptr) {
    s = new Stream;
    s->device = device;
    s->legacy = true;
    s->start();
  }
  return s;
}

bool is_legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

// The stream behind a handle, or nullptr for an unknown one. Caller holds g_mutex.
Stream* resolve(cudaStream_t s) {
  if (is_legacy(s)) return legacy_stream(t_device);
  auto* p = reinterpret_cast<Stream*>(s);
  return g_streams.count(p) != 0 && !p->destroyed ? p : nullptr;
}

// Whether the calling thread may make a potentially unsafe call now; if not, the captures that
// prohibit it are invalidated (as the real runtime does). Caller holds g_mutex.
bool unsafe_call_allowed() {
  if (t_mode == cudaStreamCaptureModeRelaxed) return true;
  bool allowed = true;
  for (Capture* c : g_captures) {
    if (c->mode == cudaStreamCaptureModeRelaxed) continue;
    const bool mine = c->thread == std::this_thread::get_id();
    const bool prohibits = mine || (t_mode == cudaStreamCaptureModeGlobal && c->mode == cudaStreamCaptureModeGlobal);
    if (prohibits) {
      c->invalidated = true;
      allowed = false;
    }
  }
  return allowed;
}

// Enqueue on a resolved stream, or into its capture. Caller holds g_mutex.
unsigned long long enqueue_locked(Stream* s, Task t) {
  if (s->capture != nullptr) {
    s->capture->nodes.push_back(std::move(t));
    return 0;
  }
  // The legacy stream and the blocking streams of a device wait for each other's earlier work.
  std::vector<std::pair<Stream*, unsigned long long>> before;
  if (s->legacy) {
    for (Stream* o : g_streams)
      if (o->device == s->device && !o->nonblocking && o->capture == nullptr) before.emplace_back(o, o->position());
  } else if (!s->nonblocking) {
    Stream* l = legacy_stream(s->device);
    before.emplace_back(l, l->position());
  }
  for (auto& [o, p] : before) {
    if (!o->reached(p)) s->push(Task{[o = o, p = p] { o->wait_for(p); }});
  }
  return s->push(std::move(t));
}

void wait_device_streams(int device, bool blocking_only) {
  std::vector<std::pair<Stream*, unsigned long long>> marks;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (Stream* s : g_streams)
      if (s->device == device && (!blocking_only || !s->nonblocking)) marks.emplace_back(s, s->position());
    Stream* l = legacy_stream(device);
    marks.emplace_back(l, l->position());
  }
  for (auto& [s, p] : marks) s->wait_for(p);
}

// Device memory of the current device, within its capacity. Caller holds g_mutex.
cudaError_t allocate_locked(void** p, std::size_t bytes) {
  std::size_t& used = g_used[t_device];
  if (bytes > device_memory() - std::min(used, device_memory())) return fail(cudaErrorMemoryAllocation);
  void* m = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
  if (m == nullptr) return fail(cudaErrorMemoryAllocation);
  g_memory[static_cast<const char*>(m)] = Allocation{bytes, t_device};
  used += bytes;
  *p = m;
  return cudaSuccess;
}

const Allocation* find_allocation(const void* p, const char** base) {
  auto it = g_memory.upper_bound(static_cast<const char*>(p));
  if (it == g_memory.begin()) return nullptr;
  --it;
  const char* c = static_cast<const char*>(p);
  if (c >= it->first + std::max<std::size_t>(it->second.bytes, 1)) return nullptr;
  if (base != nullptr) *base = it->first;
  return &it->second;
}

}  // namespace

namespace gjemu {

cudaError_t launch(cudaStream_t stream, std::function<void()> work, const char* what) {
  (void)what;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  need_context();
  Stream* s = resolve(stream);
  if (s == nullptr || s->device != t_device) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr && s->capture->invalidated) return fail(cudaErrorStreamCaptureInvalidated);
  enqueue_locked(s, Task{std::move(work)});
  return cudaSuccess;
}

int current_device() { return t_device; }

void* foreign_alloc(int device, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  void* m = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
  g_memory[static_cast<const char*>(m)] = Allocation{bytes, device};
  return m;
}

int device_of(const void* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Allocation* a = find_allocation(p, nullptr);
  return a != nullptr ? a->device : -1;
}

int node() {
  const int per_node = env_int("GJ_EMU_RANKS_PER_NODE", 0);
  if (per_node <= 0) return 0;
  int rank = -1;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) {
      rank = env_int(name, 0);
      break;
    }
  }
  return rank < 0 ? 0 : rank / per_node;
}

std::vector<int> context_devices() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return std::vector<int>(g_contexts.begin(), g_contexts.end());
}

std::string pci_bus_id(int device) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", (node() * 16 + device + 1) & 0xff);
  return buf;
}

}  // namespace gjemu

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_count();
  if (driver_too_old()) return fail(cudaErrorInsufficientDriver);
  return *count == 0 ? fail(cudaErrorNoDevice) : cudaSuccess;
}

// Neither initializes the runtime (the real ones answer with no usable driver too).
cudaError_t cudaDriverGetVersion(int* version) {
  *version = driver_version();
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return fail(device_count() == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(g_mutex);
  t_device = device;
  need_context();  // CUDA >= 12: cudaSetDevice initializes the device's primary context
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    default: return "unknown error (emulated runtime)";
  }
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  if (attr == cudaDevAttrMultiProcessorCount) {
    *value = 4;
    return cudaSuccess;
  }
  return fail(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceGetPCIBusId(char* pci_bus_id, int len, int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  if (pci_bus_id == nullptr || len <= 0) return fail(cudaErrorInvalidValue);
  std::snprintf(pci_bus_id, static_cast<std::size_t>(len), "%s", gjemu::pci_bus_id(device).c_str());
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "gj emulated device %d", device);
  prop->multiProcessorCount = 4;
  prop->totalGlobalMem = std::size_t{1} << 30;
  prop->major = 9;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  need_context();
  if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
  return allocate_locked(p, bytes);
}

cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  need_context();
  Stream* s = resolve(stream);
  if (s == nullptr || s->device != t_device) return fail(cudaErrorInvalidResourceHandle);
  // Graph memory nodes are not modelled: the library never allocates during capture.
  if (s->capture != nullptr) return fail(cudaErrorStreamCaptureUnsupported);
  return allocate_locked(p, bytes);
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  if (p == nullptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(g_mutex);
  need_context();
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr) return fail(cudaErrorStreamCaptureUnsupported);
  auto it = g_memory.find(static_cast<const char*>(p));
  if (it == g_memory.end() || it->second.device < 0) return fail(cudaErrorInvalidValue);
  // Stream-ordered: the memory stays valid (and counted) until the stream reaches the free.
  s->push(Task{[p] {
    std::lock_guard<std::mutex> inner(g_mutex);
    auto found = g_memory.find(static_cast<const char*>(p));
    if (found == g_memory.end()) return;
    g_used[found->second.device] -= found->second.bytes;
    g_memory.erase(found);
    std::free(p);
  }});
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  std::lock_guard<std::mutex> lock(g_mutex);
  need_context();
  void* m = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
  if (m == nullptr) return fail(cudaErrorMemoryAllocation);
  std::memset(m, 0, bytes);
  g_memory[static_cast<const char*>(m)] = Allocation{bytes, -1};
  *p = m;
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host, unsigned int) {
  *device_ptr = host;  // mapped pinned memory has one address on host and device
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    need_context();
    if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
    auto it = g_memory.find(static_cast<const char*>(p));
    if (it == g_memory.end() || it->second.device < 0) return fail(cudaErrorInvalidValue);
  }
  // cudaFree synchronizes the device: nothing enqueued may still use the memory.
  wait_device_streams(t_device, false);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_memory.find(static_cast<const char*>(p));
  if (it == g_memory.end()) return fail(cudaErrorInvalidValue);
  g_used[it->second.device] -= it->second.bytes;
  g_memory.erase(it);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_memory.find(static_cast<const char*>(p));
  if (it == g_memory.end() || it->second.device >= 0) return fail(cudaErrorInvalidValue);
  g_memory.erase(it);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  if (driver_too_old()) return fail(cudaErrorInsufficientDriver);
  std::lock_guard<std::mutex> lock(g_mutex);
  need_context();  // even for host memory: the runtime initializes the current device first
  std::memset(attr, 0, sizeof *attr);
  const char* base = nullptr;
  const Allocation* a = find_allocation(p, &base);
  if (a == nullptr) {
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = -2;
    return cudaSuccess;
  }
  attr->type = a->device >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
  attr->device = a->device >= 0 ? a->device : t_device;
  attr->devicePointer = const_cast<void*>(p);
  attr->hostPointer = a->device >= 0 ? nullptr : const_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* out, unsigned int flags) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  need_context();
  auto* s = new Stream;
  s->device = t_device;
  s->nonblocking = (flags & cudaStreamNonBlocking) != 0;
  s->start();
  g_streams.insert(s);
  *out = reinterpret_cast<cudaStream_t>(s);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* out) { return cudaStreamCreateWithFlags(out, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Stream* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (is_legacy(stream)) return fail(cudaErrorInvalidResourceHandle);
    s = resolve(stream);
    if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
    s->destroyed = true;
  }
  // Like the real runtime: returns at once, the enqueued work still runs, and device-wide
  // synchronization (cudaDeviceSynchronize, cudaFree) still waits for it: the stream stays known
  // (never freed: a waiter may hold it) while its thread finishes.
  std::thread([s] { s->shutdown(); }).detach();
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Stream* s = nullptr;
  unsigned long long position = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    need_context();
    if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
    s = resolve(stream);
    if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
    if (s->capture != nullptr) return fail(cudaErrorStreamCaptureUnsupported);
    position = s->position();
  }
  if (s->legacy) wait_device_streams(s->device, true);
  s->wait_for(position);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  need_context();
  if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr) {
    // Querying a capturing stream is illegal whatever the thread's mode: the capture is lost.
    s->capture->invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  // Not ready is an error result like any other: it becomes the thread's last error.
  return s->reached(s->position()) ? cudaSuccess : fail(cudaErrorNotReady);
}

cudaError_t cudaStreamGetDevice(cudaStream_t stream, int* device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  Stream* s = resolve(stream);
  if (s == nullptr || device == nullptr) return fail(cudaErrorInvalidResourceHandle);
  *device = s->device;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (device_count() == 0) return fail(cudaErrorNoDevice);
    need_context();
    if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
  }
  wait_device_streams(t_device, false);
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return fail(cudaErrorInvalidValue);
  const cudaStreamCaptureMode previous = t_mode;
  t_mode = *mode;
  *mode = previous;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (is_legacy(stream)) return fail(cudaErrorStreamCaptureUnsupported);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr) return fail(cudaErrorIllegalState);
  auto* c = new Capture{s, mode, std::this_thread::get_id(), false, {}};
  s->capture = c;
  g_captures.push_back(c);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  Capture* c = s->capture;
  if (c == nullptr) return fail(cudaErrorIllegalState);
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
    return fail(cudaErrorStreamCaptureWrongThread);
  s->capture = nullptr;
  g_captures.erase(std::find(g_captures.begin(), g_captures.end(), c));
  const bool invalidated = c->invalidated;
  if (!invalidated) {
    *graph = reinterpret_cast<cudaGraph_t>(new Graph{std::move(c->nodes)});
  } else {
    *graph = nullptr;
  }
  delete c;
  return invalidated ? fail(cudaErrorStreamCaptureInvalidated) : cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (is_legacy(stream)) {
    for (Capture* c : g_captures) {
      if (c->stream->device == t_device && !c->stream->nonblocking && c->mode != cudaStreamCaptureModeRelaxed)
        return fail(cudaErrorStreamCaptureImplicit);
    }
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  *status = s->capture == nullptr      ? cudaStreamCaptureStatusNone
            : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  auto* g = reinterpret_cast<Graph*>(graph);
  if (g == nullptr || count == nullptr) return fail(cudaErrorInvalidValue);
  if (nodes == nullptr) {
    *count = g->nodes.size();
    return cudaSuccess;
  }
  for (std::size_t i = 0; i < *count && i < g->nodes.size(); ++i) nodes[i] = reinterpret_cast<cudaGraphNode_t>(i + 1);
  *count = std::min(*count, g->nodes.size());
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  auto* g = reinterpret_cast<Graph*>(graph);
  if (g == nullptr) return fail(cudaErrorInvalidValue);
  *exec = reinterpret_cast<cudaGraphExec_t>(new Graph{g->nodes});
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  auto* g = reinterpret_cast<Graph*>(exec);
  std::lock_guard<std::mutex> lock(g_mutex);
  Stream* s = resolve(stream);
  if (g == nullptr || s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  for (const Task& t : g->nodes) enqueue_locked(s, t);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<Graph*>(exec);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* out, unsigned int) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  need_context();
  auto* e = new Event;
  e->device = t_device;
  g_events.insert(e);
  *out = reinterpret_cast<cudaEvent_t>(e);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* out) { return cudaEventCreateWithFlags(out, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto* e = reinterpret_cast<Event*>(event);
  if (g_events.erase(e) == 0) return fail(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto* e = reinterpret_cast<Event*>(event);
  if (g_events.count(e) == 0) return fail(cudaErrorInvalidResourceHandle);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  // An event and the stream it is recorded on must belong to one device.
  if (s->device != e->device) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr) {
    e->captured = true;  // a node of the graph: says nothing about this enqueue
    return cudaSuccess;
  }
  e->captured = false;
  e->stream = s;
  e->position = s->position();
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
  auto* e = reinterpret_cast<Event*>(event);
  if (g_events.count(e) == 0) return fail(cudaErrorInvalidResourceHandle);
  if (e->stream == nullptr || e->stream->reached(e->position)) return cudaSuccess;
  // The real runtime records cudaErrorNotReady as the thread's last error too: a launch check
  // (cudaGetLastError after a kernel launch) that follows reports it unless it was cleared.
  return fail(cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Stream* s = nullptr;
  unsigned long long position = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
    auto* e = reinterpret_cast<Event*>(event);
    if (g_events.count(e) == 0) return fail(cudaErrorInvalidResourceHandle);
    s = e->stream;
    position = e->position;
  }
  if (s != nullptr) s->wait_for(position);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.0f;  // the emulation keeps no device clock
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto* e = reinterpret_cast<Event*>(event);
  if (g_events.count(e) == 0) return fail(cudaErrorInvalidResourceHandle);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr && e->stream != nullptr && !e->captured) {
    // A captured stream waiting on work outside the capture: the real runtime refuses it.
    s->capture->invalidated = true;
    return fail(cudaErrorStreamCaptureIsolation);
  }
  if (e->stream == nullptr || e->stream == s) return cudaSuccess;
  Stream* other = e->stream;
  s->waited_for.insert(other);
  const unsigned long long position = e->position;
  enqueue_locked(s, Task{[other, position] { other->wait_for(position); }});
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (device_count() == 0) return fail(cudaErrorNoDevice);
    need_context();
    if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
  }
  // On the legacy stream: after the device's blocking streams' work.
  wait_device_streams(t_device, true);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (device_count() == 0) return fail(cudaErrorNoDevice);
    need_context();
    if (!unsafe_call_allowed()) return fail(cudaErrorStreamCaptureUnsupported);
    if (find_allocation(dst, nullptr) == nullptr) return fail(cudaErrorInvalidValue);
  }
  wait_device_streams(t_device, true);
  std::memset(dst, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  return gjemu::launch(stream, [=] { std::memmove(dst, src, bytes); }, "cudaMemcpyAsync");
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return gjemu::launch(stream, [=] { std::memset(dst, value, bytes); }, "cudaMemsetAsync");
}

// The driver's context-free queries, as cudaGetDriverEntryPointByVersion hands them out.
static CUresult emu_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (flags != nullptr) *flags = 0;
  *active = g_contexts.count(dev) != 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

// Unified addressing: any pointer can be asked about without a current context; memory that no
// context allocated or registered is CUDA_ERROR_INVALID_VALUE.
static CUresult emu_cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Allocation* a = find_allocation(reinterpret_cast<const void*>(ptr), nullptr);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = a->device >= 0 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a->device >= 0 ? a->device : 0;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || fn == nullptr) return fail(cudaErrorInvalidValue);
  *fn = nullptr;
  if (driver_too_old()) return fail(cudaErrorInsufficientDriver);
  if (std::strcmp(symbol, "cuDevicePrimaryCtxGetState") == 0) *fn = reinterpret_cast<void*>(&emu_cuDevicePrimaryCtxGetState);
  if (std::strcmp(symbol, "cuPointerGetAttribute") == 0) *fn = reinterpret_cast<void*>(&emu_cuPointerGetAttribute);
  if (status != nullptr) *status = *fn != nullptr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

// Not CUDA's: 1 when `stream` ever waited (cudaStreamWaitEvent) for an event recorded on `other`
// (nullptr: the current device's legacy stream), for tests that assert the order between
// streams; a test finds it with dlsym (absent from the real runtime).
int gjemu_stream_waited_for(cudaStream_t stream, cudaStream_t other) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Stream* s = resolve(stream);
  Stream* o = resolve(other);
  return s != nullptr && o != nullptr && s->waited_for.count(o) != 0 ? 1 : 0;
}

// The driver library's pointer query (emu/driver_emu.c, libcuda.so.1): answers whatever the
// runtime's state, as the real driver does for memory any runtime allocated through it.
CUresult gjemu_driver_cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return emu_cuPointerGetAttribute(data, attribute, ptr);
}

}  // extern "C"
