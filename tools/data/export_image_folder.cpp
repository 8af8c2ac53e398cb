// stoker-export-image-folder: writes an IDX dataset (e.g. Fashion-MNIST) as
// PNG class folders, for tests and for trying `pipeline.source =
// "image-folder"`.
//
//   stoker-export-image-folder IDX_DIR OUT_DIR [--limit=N] [--split=train|test]
//
// IDX_DIR holds {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]; OUT_DIR
// gets one folder per class (Fashion-MNIST's names when there are ten).

#include <filesystem>
#include <iostream>
#include <string>

#include "stoker/errors.hpp"
#include "data/idx_file.hpp"
#include "data/image_folder.hpp"

namespace {

std::string idx_file(const std::string& dir, const std::string& split,
                     const std::string& what) {
  auto plain = (std::filesystem::path{dir}
                / ((split == "test" ? "t10k" : "train") + what))
                 .string();
  return std::filesystem::exists(plain) ? plain : plain + ".gz";
}

int usage(const std::string& why) {
  std::cerr << "stoker-export-image-folder: " << why
            << "\nusage: stoker-export-image-folder IDX_DIR OUT_DIR "
               "[--limit=N] [--split=train|test]"
            << std::endl;
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  uint64_t limit = 0;
  std::string split = "train";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--limit=", 0) == 0) {
      try {
        limit = std::stoull(arg.substr(8));
      } catch (const std::exception&) {
        return usage(arg + ": expected a whole number");
      }
    } else if (arg.rfind("--split=", 0) == 0) {
      split = arg.substr(8);
      if (split != "train" && split != "test")
        return usage(arg + ": expected train or test");
    } else if (arg.rfind("--", 0) == 0) {
      return usage("unknown option " + arg);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2)
    return usage("expected IDX_DIR and OUT_DIR");
  auto images = stoker::read_idx(
    idx_file(positional[0], split, "-images-idx3-ubyte"), 3);
  auto labels = stoker::read_idx(
    idx_file(positional[0], split, "-labels-idx1-ubyte"), 1);
  if (!images || !labels) {
    std::cerr << "stoker-export-image-folder: "
              << stoker::describe(!images ? images.error() : labels.error())
              << std::endl;
    return 1;
  }
  std::vector<std::string> names;
  uint32_t classes = 0;
  for (auto l : labels->data)
    classes = std::max<uint32_t>(classes, l + 1u);
  if (classes == 10)
    names = stoker::fashion_mnist_classes();
  std::cout << "writing " << (limit > 0 ? std::min<uint64_t>(limit,
                                                            images->dims[0])
                                        : images->dims[0])
            << " " << split << " images to " << positional[1] << " ..."
            << std::endl;
  auto written = stoker::export_image_folder(*images, *labels, positional[1],
                                             names, limit);
  if (!written) {
    std::cerr << "stoker-export-image-folder: "
              << stoker::describe(written.error()) << std::endl;
    return 1;
  }
  std::cout << *written << " PNG files in " << classes << " class folders"
            << std::endl;
  return 0;
}
