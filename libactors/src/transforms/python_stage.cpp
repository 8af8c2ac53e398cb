#include "transforms/python_stage.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <optional>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "stoker/errors.hpp"
#include "transforms/python_stage_host.hpp"

extern char** environ;

namespace stoker {

namespace {

constexpr int child_socket_fd = 3;
constexpr int child_memory_fd = 4;

size_t aligned(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// An fd that is not one of the child's fixed numbers (dup2 onto itself
// would keep its close-on-exec flag).
int above_fixed(int fd) {
  if (fd > child_memory_fd)
    return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, child_memory_fd + 1);
  ::close(fd);
  return moved;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = ::sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig)
           + (name ? std::string{" (SIG"} + name + ")" : "");
  }
  if (WIFEXITED(status))
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

// Waits until `fd` is readable or `deadline` passes: false on a timeout.
bool readable_by(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
    if (left < 0)
      return false;
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      return true; // the read says what is wrong
  }
}

enum class io_result { ok, closed, timed_out };

io_result read_all(int fd, void* into, size_t n,
                   std::chrono::steady_clock::time_point deadline) {
  auto* at = static_cast<char*>(into);
  while (n > 0) {
    if (!readable_by(fd, deadline))
      return io_result::timed_out;
    auto got = ::recv(fd, at, n, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return io_result::closed;
    at += got;
    n -= static_cast<size_t>(got);
  }
  return io_result::ok;
}

bool write_all(int fd, const void* from, size_t n) {
  auto* at = static_cast<const char*>(from);
  while (n > 0) {
    auto put = ::send(fd, at, n, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return false;
    at += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

struct reply_head {
  uint64_t status = 0, h = 0, w = 0, c = 0, text_bytes = 0;
};

// The text after a reply's head, all of it (a part left in the socket
// would be read as the next reply's head); nothing if it is past 16 MiB
// or does not come by `deadline` (the caller then treats the process as
// gone).
std::optional<std::string>
read_text(int fd, uint64_t bytes,
          std::chrono::steady_clock::time_point deadline) {
  if (bytes > (uint64_t{16} << 20))
    return std::nullopt;
  std::string text(bytes, '\0');
  if (read_all(fd, text.data(), text.size(), deadline) != io_result::ok)
    return std::nullopt;
  return text;
}

std::string paths_of(const python_stage_options& o) {
  if (o.path.empty())
    return "python.path is empty";
  std::string s = "python.path = [";
  for (size_t i = 0; i < o.path.size(); ++i)
    s += (i ? ", \"" : "\"") + o.path[i] + "\"";
  return s + "]";
}

// The node's environment with the math libraries held to one thread: a
// stage process runs one call at a time on one core (W processes for W
// workers), and OpenBLAS's own threads spin in sched_yield after each
// call (torchvision's affine ops multiply matrices), taking a second core
// from the workers: 115% CPU for one stage process was measured.
std::vector<std::string> one_thread_environment() {
  static constexpr const char* held[] = {"OMP_NUM_THREADS",
                                         "OPENBLAS_NUM_THREADS",
                                         "MKL_NUM_THREADS"};
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry{*e};
    bool ours = std::any_of(std::begin(held), std::end(held),
                            [&](std::string_view key) {
                              return entry.size() > key.size()
                                     && entry.substr(0, key.size()) == key
                                     && entry[key.size()] == '=';
                            });
    if (!ours)
      out.emplace_back(entry);
  }
  for (const char* key : held)
    out.push_back(std::string{key} + "=1");
  return out;
}

} // namespace

uint64_t python_stage_seed(uint32_t word0, uint32_t word1) noexcept {
  // 63 bits: torch.manual_seed, random.seed and numpy (mod 2^32) all take
  // it as it is.
  return ((uint64_t{word0} << 32) | word1) >> 1;
}

python_stage_process::python_stage_process(private_tag,
                                           python_stage_options options,
                                           int pid, int socket, int memory)
  : options_(std::move(options)), pid_(pid), socket_(socket),
    memory_(memory) {
}

caf::expected<std::unique_ptr<python_stage_process>>
python_stage_process::start(const python_stage_options& options) {
  auto name = options.entry_text();
  auto failed = [&](const std::string& what) {
    return make_error(errc::io_failure, name + ": " + what + ": "
                                          + std::strerror(errno));
  };
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return failed("cannot make a socket pair");
  int ours = pair[0];
  int theirs = above_fixed(pair[1]);
  int memory = above_fixed(::memfd_create("stoker-python-stage", MFD_CLOEXEC));
  if (theirs < 0 || memory < 0) {
    auto err = failed("cannot make its shared memory");
    ::close(ours);
    if (theirs >= 0)
      ::close(theirs);
    if (memory >= 0)
      ::close(memory);
    return err;
  }
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, theirs, child_socket_fd);
  ::posix_spawn_file_actions_adddup2(&actions, memory, child_memory_fd);
  // What the function prints goes to the node's standard error: its
  // standard output carries the node's own lines (log.format = json).
  ::posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  ::posix_spawn_file_actions_addclosefrom_np(&actions, child_memory_fd + 1);
  // A group of its own, no signal blocked: a Ctrl-C at the terminal is
  // the node's to handle (the stage leaves when its socket closes, or
  // within half a second of the node's end), not a KeyboardInterrupt in
  // user code.
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  sigset_t none;
  ::sigemptyset(&none);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK
                                      | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> args{options.executable, "-c",
                                python_stage_host_script(),
                                std::to_string(child_socket_fd),
                                std::to_string(child_memory_fd), options.ref};
  args.insert(args.end(), options.path.begin(), options.path.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto env_strings = one_thread_environment();
  std::vector<char*> env;
  for (auto& e : env_strings)
    env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = -1;
  int spawned = ::posix_spawn(&pid, options.executable.c_str(), &actions,
                              &attr, argv.data(), env.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  ::close(theirs);
  if (spawned != 0) {
    ::close(ours);
    ::close(memory);
    errno = spawned;
    return failed("cannot start python.executable \"" + options.executable
                  + "\"");
  }
  auto process = std::make_unique<python_stage_process>(private_tag{}, options,
                                                        pid, ours, memory);
  reply_head hello;
  auto deadline = std::chrono::steady_clock::now() + options.import_timeout;
  auto got = read_all(ours, &hello, sizeof(hello), deadline);
  if (got == io_result::timed_out)
    return make_error(errc::io_failure,
                      name + ": the interpreter did not import it within "
                        + std::to_string(options.import_timeout.count() / 1000)
                        + " s");
  if (got == io_result::closed)
    return process->died("it imported the module");
  auto text = read_text(ours, hello.text_bytes, deadline);
  if (!text)
    return process->died("it imported the module");
  if (hello.status != 0)
    return make_error(errc::invalid_config,
                      name + ": cannot import it (" + *text + "); expected "
                        + "MODULE:CALLABLE importable by \""
                        + options.executable + "\" with " + paths_of(options));
  return process;
}

python_stage_process::~python_stage_process() {
  if (map_)
    ::munmap(map_, mapped_);
  if (socket_ >= 0)
    ::close(socket_); // the interpreter reads its end and leaves
  if (memory_ >= 0)
    ::close(memory_);
  if (pid_ <= 0)
    return;
  int status = 0;
  for (int i = 0; i < 50; ++i) { // up to 0.5 s to leave on its own
    if (::waitpid(pid_, &status, WNOHANG) != 0)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
}

caf::error python_stage_process::died(const std::string& while_doing) {
  alive_ = false;
  int pid = pid_;
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 100 && done == 0; ++i) { // it closed: it is ending
    done = ::waitpid(pid_, &status, WNOHANG);
    if (done == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string how = "ended";
  if (done == pid_) {
    how = how_it_ended(status);
    pid_ = -1; // reaped: the destructor leaves it alone
  }
  return make_error(errc::io_failure,
                    options_.entry_text() + "'s process (pid "
                      + std::to_string(pid) + ") " + how + " while "
                      + while_doing);
}

caf::error python_stage_process::grow(size_t bytes) {
  if (bytes <= mapped_)
    return caf::none;
  size_t size = std::max(bytes, size_t{1} << 20);
  if (map_)
    ::munmap(map_, mapped_);
  map_ = nullptr;
  mapped_ = 0;
  if (::ftruncate(memory_, static_cast<off_t>(size)) != 0)
    return make_error(errc::io_failure,
                      options_.entry_text() + ": cannot size its shared "
                        + "memory to " + std::to_string(size) + " bytes: "
                        + std::strerror(errno));
  void* at = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED,
                    memory_, 0);
  if (at == MAP_FAILED)
    return make_error(errc::io_failure,
                      options_.entry_text() + ": cannot map its shared "
                        + "memory: " + std::strerror(errno));
  map_ = static_cast<unsigned char*>(at);
  mapped_ = size;
  return caf::none;
}

caf::expected<python_stage_process::reply_words>
python_stage_process::exchange(const uint64_t (&head)[10], const char* what,
                               std::string* traceback,
                               const uint64_t* progress) {
  auto name = options_.entry_text();
  if (!write_all(socket_, head, sizeof(head)))
    return died(std::string{"it was given a "} + what);
  auto deadline = std::chrono::steady_clock::now() + options_.call_timeout;
  // A second at a time, the deadline moved on while the count of samples
  // done grows: call_timeout is one sample's.
  uint64_t done = 0;
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (readable_by(socket_, std::min(deadline,
                                      now + std::chrono::seconds(1)))) {
      // The reply has begun: the rest of it comes within a call_timeout.
      deadline = std::chrono::steady_clock::now() + options_.call_timeout;
      break;
    }
    now = std::chrono::steady_clock::now();
    uint64_t seen = progress ? __atomic_load_n(progress, __ATOMIC_ACQUIRE)
                             : 0;
    if (seen != done) {
      done = seen;
      deadline = now + options_.call_timeout;
    } else if (now >= deadline) {
      break;
    }
  }
  reply_head reply;
  auto got = read_all(socket_, &reply, sizeof(reply), deadline);
  if (got == io_result::timed_out) {
    alive_ = false; // its state is unknown: the destructor kills it
    timed_out_ = true;
    return make_error(errc::io_failure,
                      name + " took longer than "
                        + std::to_string(options_.call_timeout.count() / 1000)
                        + " s on one " + what + "; its process (pid "
                        + std::to_string(pid_) + ") is stopped");
  }
  if (got == io_result::closed)
    return died(std::string{"it ran on a "} + what);
  auto text = read_text(socket_, reply.text_bytes, deadline);
  if (!text)
    return died("it answered");
  if (reply.status != 0)
    return call_error(reply.status, *text, traceback);
  return reply_words{reply.h, reply.w, reply.c, std::move(*text)};
}

caf::error python_stage_process::call_error(uint64_t status,
                                            const std::string& text,
                                            std::string* traceback) const {
  auto line_end = text.find('\n');
  auto first = text.substr(0, line_end);
  if (traceback)
    *traceback = line_end == std::string::npos ? std::string{}
                                               : text.substr(line_end + 1);
  return make_error(errc::io_failure, options_.entry_text()
                                        + (status == 1 ? " raised " : " ")
                                        + first);
}

caf::expected<cv::Mat> python_stage_process::call(const cv::Mat& image,
                                                  uint64_t seed,
                                                  std::string* traceback) {
  std::vector<std::string> tracebacks;
  auto made = call_many({image}, {seed}, traceback ? &tracebacks : nullptr);
  if (!made)
    return std::move(made.error());
  if (traceback)
    *traceback = std::move(tracebacks.front());
  return std::move(made->front());
}

caf::expected<std::vector<caf::expected<cv::Mat>>>
python_stage_process::call_many(const std::vector<cv::Mat>& images,
                                const std::vector<uint64_t>& seeds,
                                std::vector<std::string>* tracebacks) {
  auto name = options_.entry_text();
  if (!alive_)
    return make_error(errc::io_failure, name + ": its process has ended");
  size_t n = images.size();
  std::vector<caf::expected<cv::Mat>> out;
  out.reserve(n);
  if (tracebacks)
    tracebacks->assign(n, std::string{});
  // The memory: the count of samples done (the process's progress, which
  // keeps the deadline at call_timeout a sample), a record of 8 words a
  // sample from byte 64 (seed, h, w, c, dtype, where its pixels are, where
  // the result goes, 0), then the pixels, each image at a 64-byte
  // boundary. A sample this side refuses is not sent (its record's h is
  // 0).
  constexpr size_t words = 8;
  constexpr size_t records_at = 64;
  size_t at = aligned(records_at + n * words * sizeof(uint64_t));
  std::vector<uint64_t> records(n * words, 0);
  std::vector<int> types(n, 0); // as they cross
  for (size_t i = 0; i < n; ++i) {
    const cv::Mat& image = images[i];
    int depth = image.depth();
    out.emplace_back(cv::Mat{});
    if (image.dims != 2 || (depth != CV_8U && depth != CV_32F)
        || image.channels() < 1 || image.channels() > 4) {
      out.back() = make_error(errc::io_failure,
                              name + ": takes 8-bit or float32 images of 1 "
                                + "to 4 channels; got type "
                                + std::to_string(image.type()));
      continue;
    }
    if (options_.bytes_from_floats && depth == CV_32F)
      depth = CV_8U;
    types[i] = CV_MAKETYPE(depth, image.channels());
    if (options_.pil && (depth != CV_8U || image.channels() == 2)) {
      out.back() = make_error(
        errc::io_failure,
        name + ": takes 8-bit images of 1, 3 or 4 channels (PIL's modes L, "
          + "RGB, RGBA); got " + std::to_string(image.channels())
          + " channel(s) of " + (depth == CV_8U ? "8-bit" : "float32")
          + " pixels");
      continue;
    }
    size_t bytes = image.total() * CV_ELEM_SIZE(types[i]);
    uint64_t* r = &records[i * words];
    r[0] = seeds[i];
    r[1] = static_cast<uint64_t>(image.rows);
    r[2] = static_cast<uint64_t>(image.cols);
    r[3] = static_cast<uint64_t>(image.channels());
    r[4] = depth == CV_8U ? 0u : 1u;
    r[5] = at; // the result comes back in its place: half the memory
    r[6] = at; // to pass through the cache, no copy where it is unchanged
    at = aligned(at + bytes);
  }
  if (auto err = grow(at))
    return err;
  std::memset(map_, 0, records_at);
  std::memcpy(map_ + records_at, records.data(),
              records.size() * sizeof(uint64_t));
  for (size_t i = 0; i < n; ++i) {
    const uint64_t* r = &records[i * words];
    if (r[1] == 0)
      continue;
    const cv::Mat& image = images[i];
    cv::Mat place(image.rows, image.cols, types[i], map_ + r[5]);
    if (types[i] != image.type()) // a fused pass's floats: bytes, there
      image.convertTo(place, CV_8U, 255.0);
    else
      image.copyTo(place);
  }
  uint64_t head[10] = {3, 0, 0, 0, 0, 0, mapped_, 0, n,
                       options_.pil ? 1u : 0u};
  auto reply = exchange(head, "sample", nullptr,
                        reinterpret_cast<const uint64_t*>(map_));
  if (!reply)
    return std::move(reply.error());
  for (size_t i = 0; i < n; ++i) {
    const uint64_t* r = &records[i * words];
    if (r[1] == 0)
      continue;
    const cv::Mat& image = images[i];
    cv::Mat made(image.rows, image.cols, types[i]);
    std::memcpy(made.data, map_ + r[6], made.total() * made.elemSize());
    out[i] = std::move(made);
  }
  // The samples that failed: [[index, status, text], ...].
  auto malformed = [&] {
    alive_ = false; // out of step with this side: the destructor kills it
    return make_error(errc::io_failure,
                      name + "'s process (pid " + std::to_string(pid_)
                        + ") answered with a malformed list of failures; "
                        + "it is stopped");
  };
  if (reply->a > 0) {
    auto failed = nlohmann::json::parse(reply->text, nullptr, false);
    if (!failed.is_array() || failed.size() != reply->a)
      return malformed();
    for (auto& f : failed) {
      if (!f.is_array() || f.size() != 3 || !f[0].is_number_unsigned()
          || f[0].get<size_t>() >= n || !f[1].is_number_unsigned()
          || !f[2].is_string())
        return malformed();
      auto i = f[0].get<size_t>();
      out[i] = call_error(f[1].get<uint64_t>(), f[2].get<std::string>(),
                          tracebacks ? &(*tracebacks)[i] : nullptr);
    }
  }
  return out;
}

caf::expected<std::vector<float>>
python_stage_process::call_batch(const batch_view& batch, uint64_t seed,
                                 std::string* traceback) {
  auto name = options_.entry_text();
  if (!alive_)
    return make_error(errc::io_failure, name + ": its process has ended");
  size_t count = batch.images_count();
  size_t image_bytes = count * sizeof(float);
  size_t labels_at = aligned(image_bytes);
  size_t in_bytes = labels_at + batch.n * sizeof(int64_t);
  size_t out_at = aligned(in_bytes);
  size_t out_labels = std::max(batch.n * sizeof(int64_t),
                               batch.n * size_t{batch.classes}
                                 * sizeof(float));
  if (auto err = grow(out_at + labels_at + out_labels))
    return err;
  std::memcpy(map_, batch.images, image_bytes);
  std::memcpy(map_ + labels_at, batch.labels, batch.n * sizeof(int64_t));
  uint64_t head[10] = {2, seed, batch.h, batch.w, batch.c, 1, mapped_,
                       out_at, batch.n, batch.classes};
  auto reply = exchange(head, "batch", traceback);
  if (!reply)
    return std::move(reply.error());
  std::memcpy(batch.images, map_ + out_at, image_bytes);
  std::vector<float> soft;
  if (reply->a == 0) { // the labels as they were (or changed, but hard)
    std::memcpy(batch.labels, map_ + out_at + labels_at,
                batch.n * sizeof(int64_t));
  } else {
    soft.resize(batch.n * size_t{batch.classes});
    std::memcpy(soft.data(), map_ + out_at + labels_at,
                soft.size() * sizeof(float));
  }
  return soft;
}

} // namespace stoker
