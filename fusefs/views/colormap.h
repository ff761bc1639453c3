// Colormaps of the .png views (png_view.h): a picture's 256 levels become
// the 256 colours of a palette. Pure functions: thread-safe.
//
//   gray     level L is the gray (L, L, L) (the default)
//   viridis  dark blue through green to yellow, perceptually uniform;
//            9 anchor colours (those of the published viridis map at
//            0, 1/8, ..., 1) joined by straight lines in sRGB
//   NAME_r   either of them reversed
#ifndef SLABFS_FUSEFS_VIEWS_COLORMAP_H_
#define SLABFS_FUSEFS_VIEWS_COLORMAP_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace slabfs::fusefs::views {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

using Palette = std::array<Rgb, 256>;

// The palette of a colormap name (case-sensitive); nullopt for a name that
// is none of the above.
std::optional<Palette> NamedColormap(std::string_view name);

// The names NamedColormap takes, for messages: "gray, viridis (each also
// reversed as NAME_r)".
std::string_view KnownColormaps();

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_COLORMAP_H_
