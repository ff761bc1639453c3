#include "fusefs/views/png_encoder.h"

#include <png.h>

#include <csetjmp>
#include <exception>

#include <fmt/format.h>

namespace slabfs::fusefs::views {
namespace {

// What libpng's callbacks reach through its io and error pointers. The
// callbacks catch everything: an exception is kept here and thrown again
// once libpng has jumped back into our frame.
struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngSink sink;
  Status error;
  std::exception_ptr exception;
  uint32_t rows_left = 0;
};

[[noreturn]] void OnError(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  if (s->error.ok() && !s->exception) {
    try {
      s->error = Status::InvalidArgument(fmt::format("libpng: {}", msg));
    } catch (...) {
      s->exception = std::current_exception();
    }
  }
  png_longjmp(png, 1);
}

void OnWarning(png_structp /*png*/, png_const_charp /*msg*/) {}

void OnWrite(png_structp png, png_bytep data, size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  bool failed = false;
  try {
    Status st = s->sink(data, n);
    if (!st.ok()) {
      s->error = std::move(st);
      failed = true;
    }
  } catch (...) {
    s->exception = std::current_exception();
    failed = true;
  }
  if (failed) png_error(png, "the output failed");  // no C++ object is live here
}

void OnFlush(png_structp /*png*/) {}

// The functions that call libpng hold setjmp's target: they construct
// nothing that a longjmp could skip, and they return false after one.
bool WriteHeaderC(PngState* s, const PngHeader& h, const png_color* plte, png_text* text, int ntext) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_set_write_fn(s->png, s, OnWrite, OnFlush);
  int color = PNG_COLOR_TYPE_GRAY;
  switch (h.color) {
    case PngColor::kGray: color = PNG_COLOR_TYPE_GRAY; break;
    case PngColor::kPalette: color = PNG_COLOR_TYPE_PALETTE; break;
    case PngColor::kRgb: color = PNG_COLOR_TYPE_RGB; break;
    case PngColor::kRgba: color = PNG_COLOR_TYPE_RGB_ALPHA; break;
  }
  png_set_IHDR(s->png, s->info, h.width, h.height, 8, color, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (plte != nullptr) png_set_PLTE(s->png, s->info, plte, 256);
  if (ntext > 0) png_set_text(s->png, s->info, text, ntext);
  png_set_compression_level(s->png, h.zlib_level);
  png_write_info(s->png, s->info);
  return true;
}

bool WriteRowC(PngState* s, const uint8_t* row) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_write_row(s->png, row);
  return true;
}

bool WriteEndC(PngState* s) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_write_end(s->png, nullptr);
  return true;
}

// After a longjmp: the exception a callback caught, or the error.
Status Failed(PngState* s) {
  if (s->exception) {
    std::exception_ptr e = std::move(s->exception);
    s->exception = nullptr;
    if (s->error.ok()) s->error = Status::IOError("libpng: interrupted by an exception");
    std::rethrow_exception(e);
  }
  if (s->error.ok()) s->error = Status::IOError("libpng failed");
  return s->error;
}

}  // namespace

struct PngEncoder::Png : PngState {
  ~Png() {
    if (png != nullptr) png_destroy_write_struct(&png, info != nullptr ? &info : nullptr);
  }
};

unsigned SamplesPerPixel(PngColor color) {
  switch (color) {
    case PngColor::kGray:
    case PngColor::kPalette: return 1;
    case PngColor::kRgb: return 3;
    case PngColor::kRgba: return 4;
  }
  return 1;
}

PngEncoder::PngEncoder(std::unique_ptr<Png> png) : png_(std::move(png)) {}

PngEncoder::~PngEncoder() = default;

Result<std::unique_ptr<PngEncoder>> PngEncoder::Start(const PngHeader& h, PngSink sink) {
  if (h.width == 0 || h.height == 0 || h.width > kPngMaxSide || h.height > kPngMaxSide) {
    return Err(Status::InvalidArgument(
        fmt::format("a PNG picture of {} x {} pixels (each side 1 to {})", h.width, h.height, kPngMaxSide)));
  }
  if ((h.color == PngColor::kPalette) != h.palette.has_value()) {
    return Err(Status::InvalidArgument("a palette goes with a palette picture, and only with one"));
  }
  auto png = std::make_unique<Png>();
  png->sink = std::move(sink);
  png->rows_left = h.height;
  png->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, static_cast<PngState*>(png.get()), OnError, OnWarning);
  if (png->png == nullptr) return Err(Status::IOError("libpng: cannot make a writer"));
  png->info = png_create_info_struct(png->png);
  if (png->info == nullptr) return Err(Status::IOError("libpng: cannot make a writer's header"));

  std::vector<png_color> plte;
  if (h.palette) {
    for (const Rgb& c : *h.palette) plte.push_back(png_color{c.r, c.g, c.b});
  }
  std::vector<png_text> text(h.text.size());
  for (size_t i = 0; i < h.text.size(); ++i) {
    text[i].compression = PNG_TEXT_COMPRESSION_NONE;
    text[i].key = const_cast<char*>(h.text[i].first.c_str());
    text[i].text = const_cast<char*>(h.text[i].second.c_str());
    text[i].text_length = h.text[i].second.size();
  }
  if (!WriteHeaderC(png.get(), h, plte.empty() ? nullptr : plte.data(), text.data(), static_cast<int>(text.size()))) {
    return Err(Failed(png.get()));
  }
  return std::unique_ptr<PngEncoder>(new PngEncoder(std::move(png)));
}

Status PngEncoder::WriteRow(const uint8_t* row) {
  PngState* s = png_.get();
  if (!s->error.ok()) return s->error;
  if (s->rows_left == 0) return Status::InvalidArgument("a row past the picture's height");
  if (!WriteRowC(s, row)) return Failed(s);
  --s->rows_left;
  return Status::OK();
}

Status PngEncoder::Finish() {
  PngState* s = png_.get();
  if (!s->error.ok()) return s->error;
  if (s->rows_left != 0) {
    return Status::InvalidArgument(fmt::format("the picture ends {} rows short of its height", s->rows_left));
  }
  if (!WriteEndC(s)) return Failed(s);
  return Status::OK();
}

}  // namespace slabfs::fusefs::views
