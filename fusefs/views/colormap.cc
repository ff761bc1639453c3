#include "fusefs/views/colormap.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace slabfs::fusefs::views {
namespace {

// Viridis at 0, 1/8, ..., 1.
constexpr Rgb kViridisAnchors[] = {
    {0x44, 0x01, 0x54}, {0x47, 0x2d, 0x7b}, {0x3b, 0x52, 0x8b}, {0x2c, 0x72, 0x8e}, {0x21, 0x90, 0x8c},
    {0x27, 0xad, 0x81}, {0x5d, 0xc8, 0x63}, {0xaa, 0xdc, 0x32}, {0xfd, 0xe7, 0x25},
};

uint8_t Mix(uint8_t a, uint8_t b, double t) {
  return static_cast<uint8_t>(std::lround(a + (static_cast<double>(b) - a) * t));
}

// 256 colours along straight lines between evenly spaced anchors.
Palette Interpolate(std::span<const Rgb> anchors) {
  Palette p;
  const double segments = static_cast<double>(anchors.size() - 1);
  for (int i = 0; i < 256; ++i) {
    const double x = i / 255.0 * segments;
    const size_t k = std::min(static_cast<size_t>(x), anchors.size() - 2);
    const double t = x - static_cast<double>(k);
    const Rgb& a = anchors[k];
    const Rgb& b = anchors[k + 1];
    p[i] = Rgb{Mix(a.r, b.r, t), Mix(a.g, b.g, t), Mix(a.b, b.b, t)};
  }
  return p;
}

}  // namespace

std::optional<Palette> NamedColormap(std::string_view name) {
  bool reversed = false;
  if (name.ends_with("_r")) {
    reversed = true;
    name.remove_suffix(2);
  }
  Palette p;
  if (name == "gray") {
    for (int i = 0; i < 256; ++i) p[i] = Rgb{uint8_t(i), uint8_t(i), uint8_t(i)};
  } else if (name == "viridis") {
    p = Interpolate(kViridisAnchors);
  } else {
    return std::nullopt;
  }
  if (reversed) std::reverse(p.begin(), p.end());
  return p;
}

std::string_view KnownColormaps() { return "gray, viridis (each also reversed as NAME_r)"; }

}  // namespace slabfs::fusefs::views
