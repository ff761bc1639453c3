// A thin wrapper around libpng's writer: a header, then rows of 8-bit
// samples one at a time, then the end; the encoded bytes go to a sink as
// libpng produces them (a row is compressed as it arrives, so nothing
// holds the whole picture). libpng's errors (it reports them with
// longjmp) become a Status here and never cross a C++ frame.
//
// Not thread-safe; one encoder per picture.
#ifndef SLABFS_FUSEFS_VIEWS_PNG_ENCODER_H_
#define SLABFS_FUSEFS_VIEWS_PNG_ENCODER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fusefs/views/colormap.h"
#include "slabfs/status.h"

namespace slabfs::fusefs::views {

enum class PngColor : unsigned char {
  kGray,     // 1 sample a pixel
  kPalette,  // 1 sample a pixel, an index into `palette`
  kRgb,      // 3
  kRgba,     // 4
};

unsigned SamplesPerPixel(PngColor color);

// PNG's own limit on either side.
inline constexpr uint64_t kPngMaxSide = (uint64_t{1} << 31) - 1;

struct PngHeader {
  uint32_t width = 0;   // 1 to kPngMaxSide
  uint32_t height = 0;  // 1 to kPngMaxSide
  PngColor color = PngColor::kGray;
  std::optional<Palette> palette;  // kPalette
  // tEXt chunks (keyword, Latin-1 text) written before the pixels.
  std::vector<std::pair<std::string, std::string>> text;
  int zlib_level = 3;
};

// Receives the encoded bytes in order; an error stops the encoder.
using PngSink = std::function<Status(const uint8_t* data, size_t n)>;

class PngEncoder {
 public:
  // Writes the signature and the chunks before the pixels.
  // InvalidArgument for a header libpng refuses (zero or too large a side,
  // a palette missing); the sink's error as it returned it.
  static Result<std::unique_ptr<PngEncoder>> Start(const PngHeader& header, PngSink sink);
  ~PngEncoder();
  PngEncoder(const PngEncoder&) = delete;
  PngEncoder& operator=(const PngEncoder&) = delete;

  // The next row: width * SamplesPerPixel(color) bytes. After an error,
  // every call returns it.
  Status WriteRow(const uint8_t* row);
  // After the last row: the end chunk. InvalidArgument if rows are missing.
  Status Finish();

 private:
  struct Png;  // libpng's structs and the callbacks' state
  explicit PngEncoder(std::unique_ptr<Png> png);
  std::unique_ptr<Png> png_;
};

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_PNG_ENCODER_H_
