#pragma once

// Where the suites that read real data find it: Debian's
// dataset-fashion-mnist, which tools/setup installs.

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>

#include <unistd.h>

#include <caf/expected.hpp>

#include "stoker/errors.hpp"

namespace stoker_test {

inline const std::string fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

// Fails the test, naming the package, if the dataset is not installed.
inline void require_fashion_mnist() {
  BOOST_REQUIRE_MESSAGE(
    std::filesystem::exists(fashion_mnist_dir + "/train-images-idx3-ubyte.gz"),
    "Fashion-MNIST is not installed at " << fashion_mnist_dir
      << " (apt-get install dataset-fashion-mnist; tools/setup does)");
}

// The error of `x` as text, or "" when it holds a value: for messages of
// checks, whose arguments are evaluated whether the check fails or not.
template <class T>
std::string why(const caf::expected<T>& x) {
  return x ? std::string{} : stoker::describe(x.error());
}

// A fresh, empty directory under /tmp, removed with the object.
struct scratch_dir {
  std::string path;
  explicit scratch_dir(const std::string& what)
    : path("/tmp/stoker-test-" + what + "-" + std::to_string(::getpid())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

} // namespace stoker_test
