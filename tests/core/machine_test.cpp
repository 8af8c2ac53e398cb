#include <boost/test/unit_test.hpp>

#include <chrono>
#include <ctime>

#include <sys/wait.h>
#include <unistd.h>

#include "core/machine.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(machine)

BOOST_AUTO_TEST_CASE(a_child_process_cpu_counts_while_it_runs_and_after) {
  // A child (as a Python stage's interpreter is) burns 0.3 s of CPU, says
  // so, and waits to be told to end; this process only waits meanwhile.
  int said[2], told[2];
  BOOST_REQUIRE(::pipe(said) == 0);
  BOOST_REQUIRE(::pipe(told) == 0);
  auto before = process_cpu_seconds();
  auto pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    // 0.3 s of its own CPU (a loaded machine gives it less than wall
    // time), within 20 s.
    auto cpu = [] {
      timespec t{};
      ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
      return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
    };
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    volatile unsigned spin = 0;
    while (cpu() < 0.3 && std::chrono::steady_clock::now() < give_up)
      spin = spin + 1;
    char c = 1;
    (void) !::write(said[1], &c, 1);
    (void) !::read(told[0], &c, 1);
    ::_exit(0);
  }
  char c = 0;
  BOOST_REQUIRE(::read(said[0], &c, 1) == 1);
  auto alive = process_cpu_seconds() - before;
  BOOST_TEST(alive >= 0.2, "a live child's CPU: " << alive << " s");
  BOOST_REQUIRE(::write(told[1], &c, 1) == 1);
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  auto ended = process_cpu_seconds() - before;
  BOOST_TEST(ended >= alive - 0.02, "an ended child's CPU: " << ended << " s");
  BOOST_TEST(ended < 2.0); // counted once, not as live and reaped both
  for (int fd : {said[0], said[1], told[0], told[1]})
    ::close(fd);
}

BOOST_AUTO_TEST_SUITE_END()
