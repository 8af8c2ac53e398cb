#include <boost/test/unit_test.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "transport/buffer_pool.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(buffer_pool)

BOOST_AUTO_TEST_CASE(hands_back_the_same_storage_for_the_same_size) {
  stoker::buffer_pool pool{2};
  auto a = pool.acquire(1000);
  BOOST_TEST(a.size() == 1000u);
  const char* storage = a.data();
  pool.release(std::move(a));
  BOOST_TEST(pool.idle() == 1u);
  auto b = pool.acquire(1000);
  BOOST_TEST(b.data() == storage);
  BOOST_TEST(pool.reused() == 1u);
  BOOST_TEST(pool.idle() == 0u);
}

BOOST_AUTO_TEST_CASE(prefers_an_exact_size_then_the_largest) {
  stoker::buffer_pool pool{4};
  auto small = pool.acquire(10);
  auto big = pool.acquire(5000);
  auto exact = pool.acquire(300);
  const char* big_storage = big.data();
  const char* exact_storage = exact.data();
  pool.release(std::move(small));
  pool.release(std::move(big));
  pool.release(std::move(exact));
  BOOST_TEST(pool.acquire(300).data() == exact_storage);
  auto other = pool.acquire(4000); // no exact match: the largest, shrunk
  BOOST_TEST(other.size() == 4000u);
  BOOST_TEST(other.data() == big_storage);
}

BOOST_AUTO_TEST_CASE(keeps_at_most_its_capacity) {
  stoker::buffer_pool pool{1};
  auto a = pool.acquire(8);
  auto b = pool.acquire(8);
  pool.release(std::move(a));
  pool.release(std::move(b));
  pool.release(std::vector<char>{}); // empty buffers are not kept either
  BOOST_TEST(pool.idle() == 1u);
}

BOOST_AUTO_TEST_CASE(a_request_larger_than_every_idle_buffer_creates_one) {
  stoker::buffer_pool pool{4};
  auto small = pool.acquire(100);
  pool.release(std::move(small));
  BOOST_TEST(pool.created() == 1u);
  auto big = pool.acquire(100000); // no idle one holds it: no realloc
  BOOST_TEST(big.size() == 100000u);
  BOOST_TEST(pool.created() == 2u);
  BOOST_TEST(pool.idle() == 1u); // the small one stays for its size
  pool.release(std::move(big));
  auto again = pool.acquire(100000);
  BOOST_TEST(pool.created() == 2u);
  BOOST_TEST(pool.reused() == 1u);
  BOOST_TEST(again.size() == 100000u);
}

BOOST_AUTO_TEST_CASE(huge_pages_are_advised_for_the_aligned_part_only) {
  std::vector<char> tiny(4096);
  BOOST_TEST(!advise_huge_pages(tiny.data(), tiny.size())); // < 2 MiB
  // A 16 MiB buffer holds several aligned huge pages: the advice is taken
  // wherever the kernel has transparent huge pages at all.
  std::vector<char> big;
  big.reserve(16u << 20);
  std::ifstream thp{"/sys/kernel/mm/transparent_hugepage/enabled"};
  std::string mode;
  std::getline(thp, mode);
  bool available = thp && mode.find("[never]") == std::string::npos;
  if (available)
    BOOST_TEST(advise_huge_pages(big.data(), big.capacity()));
  else
    BOOST_TEST_MESSAGE("no transparent huge pages here: " << mode);
}

BOOST_AUTO_TEST_CASE(knows_the_buffers_it_made_and_not_copies) {
  stoker::buffer_pool pool{2};
  auto a = pool.acquire(1024);
  const void* at = a.data();
  BOOST_TEST(pool.made(at));
  std::vector<char> copy = a; // the same bytes elsewhere
  BOOST_TEST(!pool.made(copy.data()));
  pool.release(std::move(a));
  auto again = pool.acquire(1024); // recycled: still one of its own
  BOOST_TEST(again.data() == at);
  BOOST_TEST(pool.made(again.data()));
  // One more than it keeps is freed: that address is no longer its own
  // (malloc may hand it to anything).
  auto extra = pool.acquire(1024);
  auto third = pool.acquire(1024);
  const void* third_at = third.data();
  BOOST_TEST(pool.made(third_at));
  pool.release(std::move(again));
  pool.release(std::move(extra));
  pool.release(std::move(third)); // the pool keeps 2
  BOOST_TEST(pool.idle() == 2u);
  BOOST_TEST(!pool.made(third_at));
  BOOST_TEST(pool.made(at));
}

BOOST_AUTO_TEST_SUITE_END()
