// Runs a small local job (sim trainer) through the installed library and
// exits 0 when every sample was delivered exactly once.

#include <iostream>

#include <caf/actor_system.hpp>

#include "stoker/errors.hpp"
#include "stoker/local_run.hpp"
#include "stoker/node_config.hpp"

int main() {
  stoker::node_config cfg;
  auto loaded = cfg.load({"--trainer.device=sim", "--trainer.sim-step-ms=1",
                          "--pipeline.dataset-size=64",
                          "--pipeline.batch-size=16", "--worker.count=1",
                          "--pipeline.height=32", "--pipeline.width=32"});
  if (!loaded || !*loaded) {
    std::cerr << "consumer: bad config: "
              << (loaded ? std::string{"none"}
                         : stoker::describe(loaded.error()))
              << std::endl;
    return 2;
  }
  caf::actor_system sys{cfg};
  auto report = stoker::run_local(sys, **loaded);
  if (!report) {
    std::cerr << "consumer: " << stoker::describe(report.error()) << std::endl;
    return 1;
  }
  std::cout << "consumer: " << report->samples_delivered
            << " samples delivered, exactly once: "
            << (report->exactly_once() ? "yes" : "no") << std::endl;
  return report->exactly_once() && report->samples_delivered == 64 ? 0 : 1;
}
