#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "data/idx_file.hpp"

namespace stoker {

/// A folder in torchvision's ImageFolder layout: ROOT/CLASS/.../FILE, one
/// sub-directory per class, classes numbered in sorted name order, files
/// sorted by path within each class. Only image files count (png, jpg,
/// jpeg, bmp, ppm, pgm, pbm, tif, tiff, webp; any case).
struct folder_listing {
  std::vector<std::string> classes;
  std::vector<std::string> files; ///< paths relative to the root
  std::vector<int64_t> labels;    ///< one per file
  std::string fingerprint;        ///< hash of the classes and file names
};

/// Lists `root`. Errors (errc::invalid_config) name the folder: missing,
/// not a directory, no class sub-directories, or no image in any.
caf::expected<folder_listing> list_image_folder(const std::string& root);

/// Writes IDX images and labels as an image folder: ROOT/CLASS/NNNNN.png,
/// one grayscale PNG per image, class folders named `class_names[label]`
/// (or the label, zero-padded, when there are fewer names), at most
/// `limit` images (0: all). Returns how many it wrote; errors
/// (errc::io_failure) name the file that could not be written.
caf::expected<uint64_t>
export_image_folder(const idx_array& images, const idx_array& labels,
                    const std::string& root,
                    const std::vector<std::string>& class_names,
                    uint64_t limit);

/// Fashion-MNIST's ten class names, prefixed with their label so that the
/// sorted folder names keep the label order ("0-tshirt-top", ...).
const std::vector<std::string>& fashion_mnist_classes();

/// Reads a whole file; errc::io_failure names it.
caf::expected<std::vector<char>> read_whole_file(const std::string& path);

} // namespace stoker
