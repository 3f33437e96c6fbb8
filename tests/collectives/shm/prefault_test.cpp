#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "shm/prefault.h"

using gj::shm::kPrefaultMinBytes;
using gj::shm::whole_pages;

namespace {

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// Pages of [p, p + bytes) (page-aligned p) the kernel has mapped now.
std::size_t resident_pages(void* p, std::size_t bytes) {
  std::vector<unsigned char> vec(bytes / page_size());
  REQUIRE(mincore(p, bytes, vec.data()) == 0);
  std::size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

struct Mapping {
  explicit Mapping(std::size_t n, int prot = PROT_READ | PROT_WRITE) : bytes(n) {
    p = mmap(nullptr, n, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
  }
  ~Mapping() { munmap(p, bytes); }
  unsigned char* at(std::size_t off) const { return static_cast<unsigned char*>(p) + off; }
  void* p;
  std::size_t bytes;
};

}  // namespace

TEST_CASE("whole_pages keeps only the pages wholly inside the range", "[shm][prefault]") {
  CHECK(whole_pages(0, 8192, 4096).begin == 0);
  CHECK(whole_pages(0, 8192, 4096).end == 8192);
  CHECK(whole_pages(100, 8192, 4096).begin == 4096);  // partial first and last pages left out
  CHECK(whole_pages(100, 8192, 4096).end == 8192);
  CHECK(whole_pages(100, 4000, 4096).end == 0);  // no whole page: empty
  CHECK(whole_pages(4096, 4095, 4096).end == 0);
}

TEST_CASE("prefault_for_write maps a fresh buffer's whole pages and keeps its contents", "[shm][prefault]") {
  const std::size_t page = page_size(), bytes = 64 * page + kPrefaultMinBytes;
  Mapping m(bytes);
  REQUIRE(resident_pages(m.p, bytes) == 0);
  // From the middle of the first page to the middle of the last: the edge pages are not ours.
  // Needs Linux 5.14+ (MADV_POPULATE_WRITE); Debian 12's kernel is 6.1.
  REQUIRE(gj::shm::prefault_for_write(m.at(page / 2), bytes - page));
  CHECK(resident_pages(m.at(page), bytes - 2 * page) == bytes / page - 2);
  CHECK(resident_pages(m.p, page) == 0);
  CHECK(resident_pages(m.at(bytes - page), page) == 0);
  std::vector<unsigned char> zeros(bytes);
  CHECK(std::memcmp(m.p, zeros.data(), bytes) == 0);

  SECTION("a buffer already mapped is left alone") {
    CHECK_FALSE(gj::shm::prefault_for_write(m.at(page), bytes - 2 * page));
  }
  SECTION("data already there stays") {
    Mapping fresh(bytes);
    std::memset(fresh.at(page), 0x5a, page);
    CHECK(gj::shm::prefault_for_write(fresh.p, bytes));
    CHECK(resident_pages(fresh.p, bytes) == bytes / page);
    CHECK(*fresh.at(page) == 0x5a);
    CHECK(*fresh.at(2 * page - 1) == 0x5a);
    CHECK(*fresh.at(2 * page) == 0);
  }
}

TEST_CASE("prefault_for_write leaves small buffers and memory it may not write alone", "[shm][prefault]") {
  Mapping small(kPrefaultMinBytes);
  CHECK_FALSE(gj::shm::prefault_for_write(small.p, kPrefaultMinBytes - 1));
  CHECK(resident_pages(small.p, kPrefaultMinBytes) == 0);
  Mapping readonly(2 * kPrefaultMinBytes, PROT_READ);
  CHECK_FALSE(gj::shm::prefault_for_write(readonly.p, readonly.bytes));  // refused, no crash
}
