#include "shm/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 uapi; older headers lack the name
#endif

namespace gj::shm {
namespace {

// Whether the page at p (page-aligned) is in memory now, mapped for this process.
bool mapped(std::uintptr_t p, std::size_t page) {
  unsigned char v = 0;
  return mincore(reinterpret_cast<void*>(p), page, &v) == 0 && (v & 1) != 0;
}

}  // namespace

bool prefault_for_write(void* p, std::size_t bytes) {
  if (bytes < kPrefaultMinBytes) return false;
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const PageSpan s = whole_pages(reinterpret_cast<std::uintptr_t>(p), bytes, page);
  if (s.end == s.begin) return false;
  // Already mapped (a buffer malloc reuses from its heap): populating would still walk every
  // page through get_user_pages, about 1 us a page here, more than this call can save. Two
  // pages tell: a fresh mmap'd buffer has nothing mapped past malloc's header in its first page.
  if (mapped(s.begin + (s.end - s.begin) / 2 / page * page, page) && mapped(s.end - page, page)) return false;
  return madvise(reinterpret_cast<void*>(s.begin), s.end - s.begin, MADV_POPULATE_WRITE) == 0;
}

}  // namespace gj::shm
