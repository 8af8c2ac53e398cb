#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "stoker/errors.hpp"
#include "support/transform_chains.hpp"
#include "transforms/python_stage.hpp"
#include "transforms/transform_chain.hpp"

// A Python stage's processes as a worker uses them: the user's function
// on a sample, seeded, bit for bit what plain Python makes; its exception,
// a wrong result and a module that is not there, named; a process that
// dies, replaced; two threads served at once; a batch's samples in one
// exchange, each failing alone; a PIL image for python-pil(...).

using namespace stoker;
namespace fs = std::filesystem;

namespace {

const char* user_module = R"PY(
import os, time, torch

def invert(x):
    return 255 - x

def noisy(x):
    return x + torch.rand(x.shape)

def boom(x):
    raise ValueError('sample too dark')

def narrower(x):
    return x[:, :, :2]

def crash(x):
    os.kill(os.getpid(), 9)

def crash_once(x):
    mark = os.path.join(os.path.dirname(__file__), 'crashed')
    if not os.path.exists(mark):
        open(mark, 'w').close()
        os.kill(os.getpid(), 9)
    return x

def slow_pid(x):
    time.sleep(0.3)
    return torch.full_like(x, float(os.getpid()))

not_callable = 3

def mixup(x, y):  # per batch: images and labels mixed with their neighbour
    lam = torch.rand(1).item()
    soft = torch.nn.functional.one_hot(y, 4).float()
    return (lam * x + (1 - lam) * x.roll(1, 0),
            lam * soft + (1 - lam) * soft.roll(1, 0))

def relabel(x, y):
    return x * 2, y + 1

def float_labels(x, y):
    return x, y.float()

def dark(x):  # every pixel 0
    return int(x.sum()) == 0

def boom_on_dark(x):
    if dark(x):
        raise ValueError('dark')
    return 255 - x

def crash_on_dark(x):
    if dark(x):
        os.kill(os.getpid(), 9)
    return 255 - x

def slow_invert(x):
    time.sleep(0.4)
    return 255 - x

def pil_mirror(image):
    from PIL import ImageOps
    return ImageOps.mirror(image)

def pil_smaller(image):
    return image.resize((2, 2))
)PY";

// A scratch folder holding the module above (stage_fns.py).
struct module_dir {
  fs::path dir;
  module_dir() {
    dir = fs::temp_directory_path()
          / ("stoker-python-stage-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream{dir / "stage_fns.py"} << user_module;
  }
  ~module_dir() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  python_stage_options options(const std::string& fn) const {
    python_stage_options o;
    o.ref = "stage_fns:" + fn;
    o.path = {dir.string()};
    o.call_timeout = std::chrono::seconds(30);
    return o;
  }
};

cv::Mat ramp(int h, int w, int type) {
  cv::Mat m(h, w, type);
  auto* p = m.data;
  for (size_t i = 0; i < m.total() * m.elemSize(); ++i)
    p[i] = static_cast<unsigned char>((i * 7) % 200);
  if (m.depth() == CV_32F)
    m = cv::Mat(h, w, type, cv::Scalar::all(0.25));
  return m;
}

// What went wrong, for a message (BOOST_REQUIRE_MESSAGE reads it even
// when the check passes).
template <class T>
std::string why(const caf::expected<T>& x) {
  return x ? std::string{} : describe(x.error());
}

std::string bytes_of(const cv::Mat& m) {
  return std::string(reinterpret_cast<const char*>(m.data),
                     m.total() * m.elemSize());
}

} // namespace

BOOST_AUTO_TEST_SUITE(python_stage)

BOOST_AUTO_TEST_CASE(a_function_sees_torchvisions_layout_and_its_result_comes_back) {
  module_dir m;
  auto p = python_stage_process::start(m.options("invert"));
  BOOST_REQUIRE_MESSAGE(p, why(p));
  auto in = ramp(5, 7, CV_8UC3);
  auto out = (*p)->call(in, 1);
  BOOST_REQUIRE_MESSAGE(out, why(out));
  BOOST_TEST(out->type() == CV_8UC3);
  BOOST_TEST(out->rows == 5);
  BOOST_TEST(out->cols == 7);
  cv::Mat expected = cv::Scalar::all(255) - in;
  BOOST_TEST(bytes_of(*out) == bytes_of(expected));
  // A view into a larger image (rows not contiguous) crosses as its pixels.
  auto big = ramp(10, 20, CV_8UC3);
  auto roi = big(cv::Rect(3, 2, 7, 5));
  auto out2 = (*p)->call(roi, 1);
  BOOST_REQUIRE(out2);
  cv::Mat expected2 = cv::Scalar::all(255) - roi;
  BOOST_TEST(bytes_of(*out2) == bytes_of(expected2));
}

BOOST_AUTO_TEST_CASE(a_seeded_call_is_bit_for_bit_what_plain_python_makes) {
  module_dir m;
  auto p = python_stage_process::start(m.options("noisy"));
  BOOST_REQUIRE_MESSAGE(p, why(p));
  cv::Mat in(4, 6, CV_32FC3, cv::Scalar::all(0.25));
  uint64_t seed = python_stage_seed(0x9e3779b9u, 0x7f4a7c15u);
  auto a = (*p)->call(in, seed);
  auto b = (*p)->call(in, seed);
  auto other = (*p)->call(in, seed + 1);
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(b);
  BOOST_REQUIRE(other);
  BOOST_TEST(bytes_of(*a) == bytes_of(*b)); // the same seed, the same draws
  BOOST_TEST(bytes_of(*a) != bytes_of(*other));
  // The same function called in plain Python on the same input and seed.
  auto expected_file = m.dir / "expected.bin";
  auto command = "/usr/bin/python3 -c \"import sys, torch; "
                 "sys.path.insert(0, '"
                 + m.dir.string()
                 + "'); import stage_fns; torch.manual_seed("
                 + std::to_string(seed)
                 + "); x = torch.full((3, 4, 6), 0.25); "
                   "y = stage_fns.noisy(x); open('"
                 + expected_file.string()
                 + "', 'wb').write(y.permute(1, 2, 0).contiguous()"
                   ".numpy().tobytes())\"";
  BOOST_REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream f{expected_file, std::ios::binary};
  std::string expected{std::istreambuf_iterator<char>(f), {}};
  BOOST_TEST(bytes_of(*a) == expected);
}

BOOST_AUTO_TEST_CASE(an_exception_is_named_and_the_process_serves_on) {
  module_dir m;
  auto p = python_stage_process::start(m.options("boom"));
  BOOST_REQUIRE(p);
  std::string traceback;
  auto out = (*p)->call(ramp(4, 4, CV_8UC3), 1, &traceback);
  BOOST_REQUIRE(!out);
  BOOST_TEST(is(out.error(), errc::io_failure));
  // Where it was raised, as the last frame of its traceback says.
  BOOST_TEST(describe(out.error()).find(
               "python(stage_fns:boom) raised ValueError: sample too dark "
               "(stage_fns.py:11 in boom)")
               != std::string::npos,
             describe(out.error()));
  BOOST_TEST(traceback.find("stage_fns.py") != std::string::npos, traceback);
  BOOST_TEST((*p)->alive());
  BOOST_TEST(!(*p)->call(ramp(4, 4, CV_8UC3), 2)); // and again, still there
  BOOST_TEST((*p)->alive());
}

BOOST_AUTO_TEST_CASE(a_result_of_the_wrong_shape_names_what_was_expected) {
  module_dir m;
  auto p = python_stage_process::start(m.options("narrower"));
  BOOST_REQUIRE(p);
  auto out = (*p)->call(ramp(4, 5, CV_8UC3), 1);
  BOOST_REQUIRE(!out);
  auto text = describe(out.error());
  BOOST_TEST(text.find("returned a torch.uint8 tensor of shape (3, 4, 2); "
                       "expected a torch.uint8 tensor of shape (C, H, W) = "
                       "(3, 4, 5)")
               != std::string::npos,
             text);
}

// A batch of 3 images 2x2x2 (float32 CHW each) and its labels.
struct small_batch {
  std::vector<float> images;
  std::vector<int64_t> labels{0, 3, 1};
  small_batch() {
    for (int i = 0; i < 24; ++i)
      images.push_back(0.125f * static_cast<float>(i % 7));
  }
  batch_view view() {
    return batch_view{images.data(), labels.data(), 3, 2, 2, 2, 4};
  }
};

BOOST_AUTO_TEST_CASE(a_batch_stage_returns_soft_labels_as_plain_python_does) {
  module_dir m;
  auto p = python_stage_process::start(m.options("mixup"));
  BOOST_REQUIRE_MESSAGE(p, why(p));
  small_batch b;
  auto original = b.images;
  uint64_t seed = python_stage_seed(0x1234u, 0x5678u);
  auto soft = (*p)->call_batch(b.view(), seed);
  BOOST_REQUIRE_MESSAGE(soft, why(soft));
  BOOST_REQUIRE_EQUAL(soft->size(), 12u); // 3 images x 4 classes
  for (size_t i = 0; i < 3; ++i) {
    float sum = 0;
    for (size_t k = 0; k < 4; ++k)
      sum += (*soft)[i * 4 + k];
    BOOST_TEST(sum == 1.0f, boost::test_tools::tolerance(1e-6f));
  }
  BOOST_TEST((b.labels == std::vector<int64_t>{0, 3, 1})); // hard: as they were
  // The same function in plain Python, the same input and seed.
  auto expected_file = m.dir / "expected_batch.bin";
  std::string values;
  for (auto v : original)
    values += std::to_string(v) + ",";
  auto command = "/usr/bin/python3 -c \"import sys, torch; "
                 "sys.path.insert(0, '"
                 + m.dir.string()
                 + "'); import stage_fns; torch.manual_seed("
                 + std::to_string(seed) + "); x = torch.tensor([" + values
                 + "]).view(3, 2, 2, 2); y = torch.tensor([0, 3, 1]); "
                   "i, s = stage_fns.mixup(x, y); open('"
                 + expected_file.string()
                 + "', 'wb').write(i.numpy().tobytes() + "
                   "s.numpy().tobytes())\"";
  BOOST_REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream f{expected_file, std::ios::binary};
  std::string expected{std::istreambuf_iterator<char>(f), {}};
  std::string got(reinterpret_cast<const char*>(b.images.data()),
                  b.images.size() * sizeof(float));
  got.append(reinterpret_cast<const char*>(soft->data()),
             soft->size() * sizeof(float));
  BOOST_TEST(got == expected);
}

BOOST_AUTO_TEST_CASE(a_batch_stage_may_return_hard_labels_or_is_told_why_not) {
  module_dir m;
  auto p = python_stage_process::start(m.options("relabel"));
  BOOST_REQUIRE_MESSAGE(p, why(p));
  small_batch b;
  auto doubled = b.images;
  for (auto& v : doubled)
    v *= 2;
  auto soft = (*p)->call_batch(b.view(), 1);
  BOOST_REQUIRE_MESSAGE(soft, why(soft));
  BOOST_TEST(soft->empty());
  BOOST_TEST((b.labels == std::vector<int64_t>{1, 4, 2}));
  BOOST_TEST((b.images == doubled));
  auto q = python_stage_process::start(m.options("float_labels"));
  BOOST_REQUIRE(q);
  small_batch c;
  auto bad = (*q)->call_batch(c.view(), 1);
  BOOST_REQUIRE(!bad);
  auto text = describe(bad.error());
  BOOST_TEST(text.find("returned labels as a torch.float32 tensor of shape "
                       "(3,); expected torch.int64 of shape (3,) or soft "
                       "labels, torch.float32 of shape (N, classes) = (3, 4)")
               != std::string::npos,
             text);
  BOOST_TEST((c.labels == std::vector<int64_t>{0, 3, 1})); // untouched
}

BOOST_AUTO_TEST_CASE(a_module_or_callable_that_is_not_there_is_refused) {
  module_dir m;
  auto missing = m.options("invert");
  missing.ref = "no_such_module:fn";
  auto a = python_stage_process::start(missing);
  BOOST_REQUIRE(!a);
  BOOST_TEST(is(a.error(), errc::invalid_config));
  auto text = describe(a.error());
  BOOST_TEST(text.find("python(no_such_module:fn): cannot import it "
                       "(ModuleNotFoundError: No module named "
                       "'no_such_module')")
               != std::string::npos,
             text);
  BOOST_TEST(text.find("python.path = [\"" + m.dir.string() + "\"]")
               != std::string::npos,
             text);
  auto b = python_stage_process::start(m.options("nothing_here"));
  BOOST_REQUIRE(!b);
  BOOST_TEST(describe(b.error()).find("AttributeError") != std::string::npos,
             describe(b.error()));
  auto c = python_stage_process::start(m.options("not_callable"));
  BOOST_REQUIRE(!c);
  BOOST_TEST(describe(c.error()).find("is a int, not a callable")
               != std::string::npos,
             describe(c.error()));
  auto no_python = m.options("invert");
  no_python.executable = "/nonexistent/python3";
  auto d = python_stage_process::start(no_python);
  BOOST_REQUIRE(!d);
  BOOST_TEST(describe(d.error()).find("/nonexistent/python3")
               != std::string::npos,
             describe(d.error()));
}

BOOST_AUTO_TEST_CASE(a_process_that_dies_is_named_and_replaced) {
  module_dir m;
  // Dies once: the pool starts another and the sample goes through.
  python_stage_pool once{m.options("crash_once"), 1};
  auto out = once.call(ramp(4, 4, CV_8UC3), 1);
  BOOST_REQUIRE_MESSAGE(out, why(out));
  BOOST_TEST(once.started() == 2u);
  // Dies every time: the second death fails the sample, named.
  python_stage_pool always{m.options("crash"), 1};
  auto failed = always.call(ramp(4, 4, CV_8UC3), 1);
  BOOST_REQUIRE(!failed);
  auto text = describe(failed.error());
  BOOST_TEST(text.find("python(stage_fns:crash)'s process (pid ")
               != std::string::npos,
             text);
  BOOST_TEST(text.find("killed by signal 9 (SIGKILL) while it ran on a "
                       "sample")
               != std::string::npos,
             text);
  BOOST_TEST(always.started() == 2u);
}

BOOST_AUTO_TEST_CASE(two_threads_are_served_by_two_processes_at_once) {
  module_dir m;
  python_stage_pool pool{m.options("slow_pid"), 2};
  cv::Mat results[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i)
    threads[i] = std::thread([&, i] {
      auto out = pool.call(ramp(2, 2, CV_32FC1), 1);
      if (out)
        results[i] = *out;
    });
  for (auto& t : threads)
    t.join();
  BOOST_REQUIRE(!results[0].empty());
  BOOST_REQUIRE(!results[1].empty());
  BOOST_TEST(pool.started() == 2u);
  // Each thread's sample was made by a process of its own.
  BOOST_TEST(results[0].at<float>(0, 0) != results[1].at<float>(0, 0));
}

BOOST_AUTO_TEST_CASE(a_primed_pool_starts_every_process_before_any_sample) {
  module_dir m;
  python_stage_pool pool{m.options("invert"), 2};
  BOOST_REQUIRE(!pool.prime());
  BOOST_TEST(pool.started() == 2u);
  auto out = pool.call(ramp(3, 3, CV_8UC3), 1);
  BOOST_TEST(bool{out}, why(out));
  BOOST_TEST(pool.started() == 2u); // no interpreter started mid-run
  python_stage_pool missing{m.options("nothing_here"), 2};
  auto err = missing.prime();
  BOOST_TEST(is(err, errc::invalid_config));
}

BOOST_AUTO_TEST_CASE(a_batch_of_samples_crosses_once_and_each_fails_alone) {
  module_dir m;
  auto p = python_stage_process::start(m.options("boom_on_dark"));
  BOOST_REQUIRE_MESSAGE(p, why(p));
  std::vector<cv::Mat> in{ramp(4, 5, CV_8UC3), cv::Mat::zeros(3, 3, CV_8UC3),
                          ramp(6, 2, CV_8UC1), cv::Mat(2, 2, CV_16UC1)};
  std::vector<std::string> tracebacks;
  auto out = (*p)->call_many(in, {1, 2, 3, 4}, &tracebacks);
  BOOST_REQUIRE_MESSAGE(out, why(out));
  BOOST_REQUIRE_EQUAL(out->size(), 4u);
  for (size_t i : {0u, 2u}) {
    BOOST_REQUIRE_MESSAGE((*out)[i], why((*out)[i]));
    cv::Mat expected = cv::Scalar::all(255) - in[i];
    BOOST_TEST(bytes_of(*(*out)[i]) == bytes_of(expected));
    BOOST_TEST(tracebacks[i].empty());
  }
  BOOST_REQUIRE(!(*out)[1]);
  BOOST_TEST(describe((*out)[1].error()).find("raised ValueError: dark")
               != std::string::npos,
             describe((*out)[1].error()));
  BOOST_TEST(tracebacks[1].find("boom_on_dark") != std::string::npos);
  BOOST_REQUIRE(!(*out)[3]); // refused here, never sent
  BOOST_TEST(describe((*out)[3].error()).find("8-bit or float32")
             != std::string::npos);
  BOOST_TEST((*p)->alive());
}

BOOST_AUTO_TEST_CASE(a_fused_passs_floats_cross_as_the_bytes_they_stand_for) {
  module_dir m;
  auto options = m.options("invert");
  options.bytes_from_floats = true;
  auto p = python_stage_process::start(options);
  BOOST_REQUIRE_MESSAGE(p, why(p));
  cv::Mat floats(3, 4, CV_32FC3);
  cv::randu(floats, cv::Scalar::all(0.0), cv::Scalar::all(1.0));
  auto out = (*p)->call(floats, 1);
  BOOST_REQUIRE_MESSAGE(out, why(out));
  BOOST_TEST(out->type() == CV_8UC3); // 8-bit, as the unfused chain's
  cv::Mat bytes;
  floats.convertTo(bytes, CV_8U, 255.0);
  cv::Mat expected = cv::Scalar::all(255) - bytes;
  BOOST_TEST(bytes_of(*out) == bytes_of(expected));
}

BOOST_AUTO_TEST_CASE(a_call_timeout_is_each_samples_not_the_batchs) {
  module_dir m;
  auto options = m.options("slow_invert");
  options.call_timeout = std::chrono::seconds(1);
  auto p = python_stage_process::start(options);
  BOOST_REQUIRE_MESSAGE(p, why(p));
  std::vector<cv::Mat> in(4, ramp(3, 3, CV_8UC3)); // 1.6 s in all
  auto out = (*p)->call_many(in, {1, 2, 3, 4});
  BOOST_REQUIRE_MESSAGE(out, why(out));
  for (auto& one : *out)
    BOOST_TEST(static_cast<bool>(one), why(one));
}

BOOST_AUTO_TEST_CASE(a_pil_stage_gets_a_pil_image_and_must_give_one_back) {
  module_dir m;
  auto options = m.options("pil_mirror");
  options.pil = true;
  options.entry = "python-pil(stage_fns:pil_mirror)";
  auto p = python_stage_process::start(options);
  BOOST_REQUIRE_MESSAGE(p, why(p));
  for (int type : {CV_8UC3, CV_8UC1, CV_8UC4}) {
    auto in = ramp(5, 7, type);
    auto out = (*p)->call(in, 1);
    BOOST_REQUIRE_MESSAGE(out, why(out));
    cv::Mat expected;
    cv::flip(in, expected, 1);
    BOOST_TEST(bytes_of(*out) == bytes_of(expected));
  }
  auto floats = (*p)->call(cv::Mat(2, 2, CV_32FC3, cv::Scalar::all(0.5)), 1);
  BOOST_REQUIRE(!floats);
  BOOST_TEST(describe(floats.error()).find("takes 8-bit images of 1, 3 or 4 "
                                           "channels (PIL's modes")
               != std::string::npos,
             describe(floats.error()));
  auto small = m.options("pil_smaller");
  small.pil = true;
  auto q = python_stage_process::start(small);
  BOOST_REQUIRE_MESSAGE(q, why(q));
  auto wrong = (*q)->call(ramp(5, 7, CV_8UC3), 1);
  BOOST_REQUIRE(!wrong);
  BOOST_TEST(describe(wrong.error()).find(
               "returned a PIL image of mode RGB and size (2, 2); expected a "
               "PIL image of mode RGB and size (W, H) = (7, 5)")
               != std::string::npos,
             describe(wrong.error()));
}

BOOST_AUTO_TEST_CASE(a_chain_crosses_once_a_group_with_apply_s_results) {
  module_dir m;
  python_binding python;
  python.spec.path = {m.dir.string()};
  auto noisy = transform_chain::bind(
    stoker_test::chain_of({"python(stage_fns:noisy)"}),
    stoker_test::chain_registry(), true, &python);
  BOOST_REQUIRE_MESSAGE(noisy, why(noisy));
  BOOST_TEST(noisy->has_python_stage());
  std::vector<chain_job> jobs(3);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].input.pixels = cv::Mat(4, 6, CV_32FC3, cv::Scalar::all(0.25));
    jobs[i].key = draw_key{7, 1, i};
  }
  chain_tally tally;
  noisy->apply_many(jobs, &tally);
  for (size_t i = 0; i < jobs.size(); ++i) {
    BOOST_REQUIRE_MESSAGE(jobs[i].result, why(jobs[i].result));
    sample_input alone;
    alone.pixels = cv::Mat(4, 6, CV_32FC3, cv::Scalar::all(0.25));
    auto one = noisy->apply(alone, draw_key{7, 1, i});
    BOOST_REQUIRE(one);
    BOOST_TEST(bytes_of(*jobs[i].result) == bytes_of(*one));
  }
  BOOST_TEST(bytes_of(*jobs[0].result) != bytes_of(*jobs[1].result));
  BOOST_REQUIRE_EQUAL(tally.stages.size(), 1u);
  BOOST_TEST(tally.stages[0].samples == 3u);
}

BOOST_AUTO_TEST_CASE(a_sample_that_kills_its_process_in_a_batch_fails_alone) {
  module_dir m;
  python_binding python;
  python.spec.path = {m.dir.string()};
  auto chain = transform_chain::bind(
    stoker_test::chain_of({"python(stage_fns:crash_on_dark)"}),
    stoker_test::chain_registry(), true, &python);
  BOOST_REQUIRE_MESSAGE(chain, why(chain));
  std::vector<chain_job> jobs(3);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].input.pixels = i == 1 ? cv::Mat::zeros(3, 3, CV_8UC3)
                                  : ramp(3, 3, CV_8UC3);
    jobs[i].key = draw_key{7, 1, i};
  }
  jobs.emplace_back(); // a file that could not be read: left as it is
  jobs.back().result = make_error(errc::io_failure, "unreadable");
  chain->apply_many(jobs);
  BOOST_TEST(static_cast<bool>(jobs[0].result), why(jobs[0].result));
  BOOST_TEST(static_cast<bool>(jobs[2].result), why(jobs[2].result));
  BOOST_REQUIRE(!jobs[1].result);
  BOOST_TEST(is(jobs[1].result.error(), errc::transform_failure));
  BOOST_TEST(describe(jobs[1].result.error()).find("killed by signal 9")
               != std::string::npos,
             describe(jobs[1].result.error()));
  BOOST_REQUIRE(!jobs[3].result);
  BOOST_TEST(describe(jobs[3].result.error()) == "unreadable");
}

BOOST_AUTO_TEST_SUITE_END()
