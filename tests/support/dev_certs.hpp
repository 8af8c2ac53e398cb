#pragma once

// Certificates for the TLS tests, made once per test process with
// tools/ops/make-certs (Debian's openssl command): one cluster CA with the
// nodes of config/tls-cluster.ini, a second CA ("other") with a worker of
// its own, and an expired worker certificate of the cluster CA.

#include <cstdlib>
#include <string>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include "stoker/errors.hpp"
#include "transport/tls.hpp"

namespace stoker::test {

struct dev_cert_dirs {
  /// ca.pem, head, trainer-0, trainer-1, worker-a, worker-b
  std::string cluster;
  std::string other;   ///< another CA: ca.pem, worker-x
  std::string expired; ///< the cluster's CA: stale.pem, stale.key (expired)
};

inline const dev_cert_dirs& dev_certs() {
  // Removed when the test process exits (made before the atexit call, so
  // destroyed after it runs).
  static const std::string base = "/tmp/stoker-certs-"
                                  + std::to_string(::getpid());
  static const dev_cert_dirs dirs = [] {
    std::atexit([] { std::system(("rm -rf " + base).c_str()); });
    dev_cert_dirs d;
    d.cluster = base + "/cluster";
    d.other = base + "/other";
    d.expired = base + "/expired";
    std::string tool = STOKER_SOURCE_DIR "/tools/ops/make-certs";
    auto run = [](const std::string& cmd) {
      BOOST_REQUIRE_MESSAGE(std::system((cmd + " >/dev/null").c_str()) == 0,
                            cmd);
    };
    run("rm -rf " + base);
    run(tool + " " + d.cluster + " head trainer-0 trainer-1 worker-a worker-b");
    run(tool + " " + d.other + " worker-x");
    // The cluster's CA, one certificate valid for 0 days: expired a second
    // after it is made.
    run("mkdir -p " + d.expired + " && cp " + d.cluster + "/ca.pem "
        + d.cluster + "/ca.key " + d.expired + "/ && DAYS=0 " + tool + " "
        + d.expired + " stale && sleep 1.1");
    return d;
  }();
  return dirs;
}

/// The TLS context of node `name` in `dir` (as tls.dir would load it).
inline std::shared_ptr<const tls_context> tls_of(const std::string& dir,
                                                 const std::string& name) {
  tls_spec spec;
  spec.dir = dir;
  auto files = resolve_tls_files(spec, name);
  BOOST_REQUIRE(files);
  auto ctx = tls_context::load(*files);
  BOOST_REQUIRE_MESSAGE(ctx, (ctx ? "" : describe(ctx.error())));
  return *ctx;
}

} // namespace stoker::test
