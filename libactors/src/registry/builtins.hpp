#pragma once

// Stoker's own registry entries, registered by builtin_registry() the same
// way a user's are.

#include <caf/error.hpp>

namespace stoker {
class registry;
} // namespace stoker

namespace stoker::detail {

/// Built-in entries are well-formed: an error adding one is a bug in
/// Stoker, thrown as std::logic_error naming it.
void must_add(caf::error err);

/// synthetic, idx, image-folder and tar-shards (builtin_sources.cpp).
void add_builtin_sources(registry& reg);

/// decode ... gaussian-blur (builtin_transforms.cpp).
void add_builtin_transforms(registry& reg);

/// trivial-augment-wide ... random-erasing (builtin_augments.cpp), called
/// by add_builtin_transforms after the flip.
void add_builtin_augments(registry& reg);

/// vit and cnn (builtin_models.cpp).
void add_builtin_models(registry& reg);

} // namespace stoker::detail
