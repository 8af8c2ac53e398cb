#include "observe/http_observer.hpp"

#include <chrono>
#include <iostream>

#include <httplib.h>

#include "stoker/errors.hpp"
#include "observe/dashboard_page.hpp"
#include "observe/job_metrics.hpp"

namespace stoker {

namespace {

// Two request threads: a dashboard and a Prometheus scraping at once.
constexpr size_t request_threads = 2;

} // namespace

http_observer::http_observer(private_tag, caf::actor_system& sys,
                             console_target target)
  : sys_(sys),
    target_(std::move(target)),
    server_(std::make_unique<httplib::Server>()) {
  // nop
}

caf::expected<std::unique_ptr<http_observer>>
http_observer::start(caf::actor_system& sys, const metrics_spec& spec,
                     console_target target,
                     std::shared_ptr<const tls_context> tls) {
  auto result = std::make_unique<http_observer>(private_tag{}, sys,
                                                std::move(target));
  auto& server = *result->server_;
  // httplib's API hands over a heap task queue it deletes itself.
  server.new_task_queue = [] {
    return new httplib::ThreadPool(request_threads);
  };
  server.set_payload_max_length(8 * 1024);
  server.set_read_timeout(5, 0);
  server.set_write_timeout(5, 0);
  server.set_keep_alive_max_count(100);
  auto* self = result.get();
  auto answer = [](httplib::Response& res, int status,
                       const std::string& body, const char* type) {
    res.status = status;
    res.set_header("Cache-Control", "no-store");
    res.set_content(body, type);
  };
  auto view = [self]() {
    console_session session{self->sys_, self->target_};
    return session.view();
  };
  server.Get("/metrics", [=](const httplib::Request&, httplib::Response& res) {
    auto job = view();
    if (!job)
      return answer(res, 503, "the router does not answer: "
                                + describe(job.error()) + "\n",
                    "text/plain; charset=utf-8");
    answer(res, 200, render_metrics(*job, STOKER_VERSION),
           "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/api/state",
             [=](const httplib::Request&, httplib::Response& res) {
               auto job = view();
               if (!job)
                 return answer(res, 503,
                               "{\"error\": \"the router does not answer\"}\n",
                               "application/json");
               answer(res, 200, render_state_json(*job, STOKER_VERSION),
                      "application/json");
             });
  server.Get("/", [=](const httplib::Request&, httplib::Response& res) {
    answer(res, 200, std::string{dashboard_page()}, "text/html; charset=utf-8");
  });
  auto refuse = [=](const httplib::Request& req, httplib::Response& res) {
    answer(res, 405, "method " + req.method + " not allowed: GET only\n",
           "text/plain; charset=utf-8");
  };
  server.Post(".*", refuse);
  server.Put(".*", refuse);
  server.Delete(".*", refuse);
  server.Patch(".*", refuse);
  server.set_error_handler([=](const httplib::Request& req,
                               httplib::Response& res) {
    if (res.status == 404)
      answer(res, 404, "no page " + req.path
                         + "; expected /, /metrics or /api/state\n",
             "text/plain; charset=utf-8");
  });
  bool gated = tls && !is_loopback(spec.bind);
  auto bind = gated ? std::string{"127.0.0.1"} : spec.bind;
  int port = gated || spec.port == 0
               ? server.bind_to_any_port(bind)
               : (server.bind_to_port(bind, spec.port) ? spec.port : -1);
  if (port < 0)
    return make_error(errc::io_failure,
                      "cannot listen for the HTTP endpoints on " + bind + ":"
                        + std::to_string(spec.port)
                        + "; expected a free port (metrics.port) and a "
                          "local address (metrics.bind)");
  result->port_ = static_cast<uint16_t>(port);
  if (gated) {
    auto front = gate::open(spec.bind, spec.port, result->port_,
                            service_gate_options("the metrics port",
                                                 std::move(tls)));
    if (!front)
      return std::move(front.error());
    result->gate_ = std::move(*front);
  }
  result->thread_ = std::thread{[self] { self->server_->listen_after_bind(); }};
  // stop() does nothing until the server runs: wait for it (microseconds;
  // listen_after_bind sets it first thing).
  for (int i = 0; i < 5000 && !server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return result;
}

http_observer::~http_observer() {
  gate_.reset();
  server_->stop();
  if (thread_.joinable())
    thread_.join();
}

uint16_t http_observer::port() const noexcept {
  return gate_ ? gate_->port() : port_;
}

caf::expected<std::unique_ptr<http_observer>>
open_http_observer(caf::actor_system& sys, const metrics_spec& spec,
                   console_target target,
                   std::shared_ptr<const tls_context> tls,
                   const std::string& who) {
  if (spec.port == 0)
    return std::unique_ptr<http_observer>{};
  bool gated = tls && !is_loopback(spec.bind);
  auto started = http_observer::start(sys, spec, std::move(target),
                                      std::move(tls));
  if (!started)
    return started;
  std::cout << who << ": dashboard on " << (gated ? "https" : "http")
            << "://" << spec.bind << ":" << (*started)->port()
            << "/ (Prometheus: /metrics, JSON: /api/state"
            << (gated ? "; mutual TLS: clients need a certificate of the "
                        "cluster's CA"
                      : "")
            << ")" << std::endl;
  return started;
}

void linger(const http_observer* observer, const metrics_spec& spec,
            const std::string& who) {
  if (observer == nullptr || spec.linger.count() <= 0)
    return;
  std::cout << who << ": run over; serving its final figures for "
            << spec.linger.count() << " ms (metrics.linger)" << std::endl;
  std::this_thread::sleep_for(spec.linger);
}

} // namespace stoker
