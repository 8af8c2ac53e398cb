#include "data/image_folder.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "stoker/counter_rng.hpp"
#include "stoker/errors.hpp"

namespace stoker {

namespace fs = std::filesystem;

namespace {

bool is_image_file(const fs::path& p) {
  auto ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (auto known : {".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".pbm",
                     ".tif", ".tiff", ".webp"})
    if (ext == known)
      return true;
  return false;
}

uint64_t hash_text(uint64_t h, const std::string& text) {
  for (unsigned char c : text)
    h = mix64(h ^ c);
  return mix64(h ^ 0xff);
}

} // namespace

caf::expected<folder_listing> list_image_folder(const std::string& root) {
  auto bad = [&](const std::string& what) {
    return make_error(errc::invalid_config,
                      "image folder \"" + root + "\": " + what);
  };
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return bad("not a directory (missing, or not shared with this node?)");
  folder_listing out;
  for (auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory(ec))
      out.classes.push_back(entry.path().filename().string());
  if (ec)
    return bad("cannot list it: " + ec.message());
  std::sort(out.classes.begin(), out.classes.end());
  if (out.classes.empty())
    return bad("no class sub-directories; expected ROOT/CLASS/IMAGE files");
  uint64_t h = 0;
  for (size_t c = 0; c < out.classes.size(); ++c) {
    h = hash_text(h, out.classes[c]);
    std::vector<std::string> files;
    auto dir = fs::path{root} / out.classes[c];
    for (auto it = fs::recursive_directory_iterator(
           dir, fs::directory_options::follow_directory_symlink, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file(ec) && is_image_file(it->path()))
        files.push_back(fs::relative(it->path(), root, ec).string());
    if (ec)
      return bad("cannot list " + dir.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      h = hash_text(h, f);
      out.files.push_back(std::move(f));
      out.labels.push_back(static_cast<int64_t>(c));
    }
  }
  if (out.files.empty())
    return bad("no image files (png, jpg, ...) in its "
               + std::to_string(out.classes.size()) + " class folder(s)");
  char text[20];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(h));
  out.fingerprint = text;
  return out;
}

const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> names = {
    "0-tshirt-top", "1-trouser", "2-pullover", "3-dress",  "4-coat",
    "5-sandal",     "6-shirt",   "7-sneaker",  "8-bag",    "9-ankle-boot"};
  return names;
}

caf::expected<uint64_t>
export_image_folder(const idx_array& images, const idx_array& labels,
                    const std::string& root,
                    const std::vector<std::string>& class_names,
                    uint64_t limit) {
  if (images.dims.size() != 3 || labels.dims.size() != 1
      || labels.dims[0] != images.dims[0])
    return make_error(errc::invalid_config,
                      "export: expected N images of HxW and N labels");
  uint64_t n = images.dims[0];
  if (limit > 0 && limit < n)
    n = limit;
  auto rows = static_cast<int>(images.dims[1]);
  auto cols = static_cast<int>(images.dims[2]);
  auto width = std::to_string(n).size();
  for (uint64_t i = 0; i < n; ++i) {
    auto label = labels.data[i];
    auto cls = label < class_names.size()
                 ? class_names[label]
                 : std::string(3 - std::min<size_t>(
                                     3, std::to_string(label).size()),
                               '0')
                     + std::to_string(label);
    auto dir = fs::path{root} / cls;
    std::error_code ec;
    fs::create_directories(dir, ec);
    auto id = std::to_string(i);
    auto file = dir / (std::string(width - id.size(), '0') + id + ".png");
    cv::Mat img(rows, cols, CV_8UC1,
                const_cast<uint8_t*>(images.data.data()
                                     + i * images.item_size()));
    bool ok = false;
    try {
      ok = cv::imwrite(file.string(), img);
    } catch (const cv::Exception&) {
      ok = false;
    }
    if (!ok)
      return make_error(errc::io_failure,
                        "export: cannot write " + file.string());
  }
  return n;
}

caf::expected<std::vector<char>> read_whole_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary | std::ios::ate};
  if (!in)
    return make_error(errc::io_failure, path + ": cannot open it");
  auto size = in.tellg();
  if (size < 0)
    return make_error(errc::io_failure, path + ": cannot tell its size");
  std::vector<char> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(bytes.data(), size))
    return make_error(errc::io_failure, path + ": cannot read it");
  return bytes;
}

} // namespace stoker
