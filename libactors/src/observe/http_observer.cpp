#include "observe/http_observer.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <httplib.h>
#include <sys/socket.h>

#include "stoker/errors.hpp"
#include "observe/dashboard_page.hpp"
#include "core/json_text.hpp"
#include "core/system_log.hpp"
#include "observe/job_metrics.hpp"

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

// Request threads: each serves a cached snapshot in well under a
// millisecond, so a few keep up with hundreds of scrapers; more only let
// idle keep-alive connections hold fewer of them.
constexpr size_t request_threads = 8;

// Debian's cpp-httplib is a compiled library that listens with a backlog
// of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when it was built): 500 scrapers
// at once then waited for SYN retries (1 s, 3 s, 7 s, ...). The listening
// socket is listened on again with this one (Linux updates the backlog).
constexpr int listen_backlog = 1024;

// A request that waited longer than this for a thread is answered 503 at
// once instead of being served late (its client may have left).
constexpr auto queued_too_long = std::chrono::milliseconds(1000);

// How long the request being handled on this thread waited for it: set
// by timed_pool around each job, read by the handlers (httplib hands a
// handler nothing else about its connection).
thread_local clock_type::duration queued_for{};

// httplib's thread pool, timing how long each connection waits for a
// thread.
class timed_pool : public httplib::TaskQueue {
public:
  explicit timed_pool(size_t threads) : pool_(threads) {}

  void enqueue(std::function<void()> fn) override {
    pool_.enqueue([fn = std::move(fn), at = clock_type::now()] {
      queued_for = clock_type::now() - at;
      fn();
    });
  }

  void shutdown() override { pool_.shutdown(); }

private:
  httplib::ThreadPool pool_;
};

} // namespace

http_observer::http_observer(private_tag, caf::actor_system& sys,
                             job_target target)
  : sys_(sys),
    target_(std::move(target)),
    server_(std::make_unique<httplib::Server>()) {
  // nop
}

caf::expected<std::unique_ptr<http_observer>>
http_observer::start(caf::actor_system& sys, const metrics_spec& spec,
                     job_target target,
                     std::shared_ptr<const tls_context> tls) {
  auto result = std::make_unique<http_observer>(private_tag{}, sys,
                                                std::move(target));
  auto& server = *result->server_;
  // httplib's API hands over a heap task queue it deletes itself.
  server.new_task_queue = [] { return new timed_pool(request_threads); };
  server.set_payload_max_length(8 * 1024);
  // A connection that sends nothing (or keeps a keep-alive open idle)
  // holds a thread: not for long.
  server.set_read_timeout(2, 0);
  server.set_write_timeout(5, 0);
  server.set_keep_alive_timeout(1);
  server.set_keep_alive_max_count(100);
  auto* self = result.get();
  auto answer = [](httplib::Response& res, int status,
                       const std::string& body, const char* type) {
    res.status = status;
    res.set_header("Cache-Control", "no-store");
    res.set_content(body, type);
  };
  // One look at the job per metrics.refresh, whatever the number of
  // scrapers: each request is served the latest.
  self->snapshots_ = std::make_unique<snapshot_cache>(
    [self] {
      job_snapshot out;
      caf::scoped_actor asker{self->sys_};
      auto job = look_at_job(asker, self->target_);
      if (!job) {
        out.error = "the router does not answer: " + describe(job.error());
        return out;
      }
      out.metrics = render_metrics(*job, STOKER_VERSION);
      out.state = render_state_json(*job, STOKER_VERSION);
      return out;
    },
    spec.refresh);
  // The snapshot to serve, or why not. A request that waited too long for
  // a thread (`busy`) is answered 503 at once, never queued further.
  auto current = [self](std::string& why, bool* busy = nullptr)
    -> std::shared_ptr<const job_snapshot> {
    if (queued_for > queued_too_long) {
      if (busy)
        *busy = true;
      why = "busy: this request waited "
            + std::to_string(
              std::chrono::duration_cast<std::chrono::milliseconds>(
                queued_for)
                .count())
            + " ms for a thread; try again";
      return nullptr;
    }
    // A stale look waits for a fresh one at most half a second (a slow
    // job is served its last figures); the very first, up to 2 s.
    auto snap = self->snapshots_->latest(std::chrono::milliseconds(500));
    if (!snap)
      snap = self->snapshots_->latest(std::chrono::milliseconds(1500));
    if (!snap)
      why = "no view of the job yet; try again";
    else if (!snap->error.empty())
      why = snap->error;
    return snap && snap->error.empty() ? snap : nullptr;
  };
  server.Get("/metrics", [=](const httplib::Request&, httplib::Response& res) {
    constexpr auto type = "text/plain; version=0.0.4; charset=utf-8";
    std::string why;
    bool busy = false;
    auto snap = current(why, &busy);
    if (busy)
      return answer(res, 503, why + "\n", "text/plain; charset=utf-8");
    if (!snap) // what is known without a view: a 200, not a 503
      return answer(res, 200,
                    render_pending_metrics(STOKER_VERSION,
                                           self->target_.nodes, why),
                    type);
    answer(res, 200, snap->metrics, type);
  });
  server.Get("/api/state",
             [=](const httplib::Request&, httplib::Response& res) {
               std::string why;
               auto snap = current(why);
               if (!snap)
                 return answer(res, 503,
                               "{\"error\": " + json_quoted(why) + "}\n",
                               "application/json");
               answer(res, 200, snap->state, "application/json");
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
  // httplib hands its listening socket to the options before binding it
  // (its own options would add SO_REUSEPORT: another process could then
  // take a share of the port).
  auto listening = std::make_shared<int>(-1);
  server.set_socket_options([listening](int fd) {
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    *listening = fd;
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
  if (*listening < 0 || ::listen(*listening, listen_backlog) != 0)
    log_to(sys, log_level::warning)
      << "dashboard: cannot widen the HTTP listen backlog to "
      << listen_backlog << " ("
      << (*listening < 0 ? "httplib did not show its socket"
                         : std::strerror(errno))
      << "); a burst of scrapers may wait for SYN retries";
  if (gated) {
    auto front = gate::open(spec.bind, spec.port, result->port_,
                            service_gate_options("the metrics port",
                                                 std::move(tls),
                                                 shared_log_of(sys)));
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
  snapshots_.reset(); // before the actors it asks
}

void http_observer::say_info(const std::string& line) const {
  log_of(sys_).info(line);
}

void http_observer::run_over() {
  if (!snapshots_->refresh(std::chrono::milliseconds(3000)))
    log_of(sys_).warning("dashboard: no snapshot of the job's final "
                         "figures within 3 s; /metrics serves the last one "
                         "taken");
}

uint16_t http_observer::port() const noexcept {
  return gate_ ? gate_->port() : port_;
}

caf::expected<std::unique_ptr<http_observer>>
open_http_observer(caf::actor_system& sys, const metrics_spec& spec,
                   job_target target,
                   std::shared_ptr<const tls_context> tls,
                   const std::string& who) {
  if (spec.port == 0)
    return std::unique_ptr<http_observer>{};
  bool gated = tls && !is_loopback(spec.bind);
  auto started = http_observer::start(sys, spec, std::move(target),
                                      std::move(tls));
  if (!started)
    return started;
  log_to(sys) << who << ": dashboard on " << (gated ? "https" : "http")
              << "://" << spec.bind << ":" << (*started)->port()
              << "/ (Prometheus: /metrics, JSON: /api/state"
              << (gated ? "; mutual TLS: clients need a certificate of the "
                 "cluster's CA"
                 : "")
              << ")";
  return started;
}

void linger(http_observer* observer, const metrics_spec& spec,
            const std::string& who) {
  if (observer == nullptr || spec.linger.count() <= 0)
    return;
  observer->run_over();
  observer->say_info(who + ": run over; serving its final figures for "
                     + std::to_string(spec.linger.count())
                     + " ms (metrics.linger)");
  std::this_thread::sleep_for(spec.linger);
}

} // namespace stoker
