#define BOOST_TEST_MODULE stoker
#include <boost/test/unit_test.hpp>

#include <csignal>

// As run_node does: the TLS tests write through OpenSSL, whose write() to a
// socket the peer closed raises SIGPIPE.
struct ignore_sigpipe {
  ignore_sigpipe() {
    std::signal(SIGPIPE, SIG_IGN);
  }
};
BOOST_TEST_GLOBAL_FIXTURE(ignore_sigpipe);
