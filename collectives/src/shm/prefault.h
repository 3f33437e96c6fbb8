// Faulting in the pages of an output buffer before the synchronized chunk loop writes it.
// A freshly allocated large tensor (torch.empty_like: mmap'd by malloc, fresh pages on
// every call) takes one page fault per 4 KiB page on its first write; inside the engine's
// lockstep chunks every rank's faults also stall its peers at the next synchronization, and
// on a VM a fault costs tens of microseconds (docs/benchmarks.md measured the faults of a
// fresh 64 MiB output at several times the whole reduction). Faulting them in first, in
// one system call per buffer, takes them out of the lockstep and saves the trap per page.
#pragma once

#include <cstddef>

namespace gj::shm {

// Buffers below this many bytes are left alone: their faults (if any) cost less than the
// system call, and small tensors usually come from malloc's already-touched heap.
constexpr std::size_t kPrefaultMinBytes = 256 * 1024;

// The whole pages inside [p, p + bytes): the edge pages, which may hold someone else's
// data, are not touched. Empty when no whole page fits.
struct PageSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};
inline PageSpan whole_pages(std::size_t p, std::size_t bytes, std::size_t page) {
  const std::size_t b = (p + page - 1) / page * page;
  const std::size_t e = (p + bytes) / page * page;
  return b < e ? PageSpan{b, e} : PageSpan{};
}

// Asks the kernel to map the whole pages of [p, p + bytes) writable now
// (madvise(MADV_POPULATE_WRITE), Linux 5.14+), unless its middle and last pages are mapped
// already (a reused buffer: nothing to save). The contents do not change. Best effort: a
// kernel without it, or memory it refuses (a read-only or special mapping), is left to fault
// as usual. Returns whether the kernel populated the span (false also when it was too small
// or already mapped).
bool prefault_for_write(void* p, std::size_t bytes);

}  // namespace gj::shm
