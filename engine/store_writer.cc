// The byte view's writes of a writable store's dataset
// (include/slabfs/store_writer.h), written once for every store over its
// Write and Resize, with the rules of the container's (dataset_bytes.cc,
// dataset_resize.cc): whole rows, partial elements merged, short counts at
// the largest size.
#include "slabfs/store_writer.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/selection/hyperslab.h"

namespace slabfs {
namespace {

uint64_t RowElements(const DatasetInfo& d) {
  uint64_t n = 1;
  for (size_t i = 1; i < d.shape.size(); ++i) n *= d.shape[i];
  return n;
}

}  // namespace

Result<size_t> WritableStoreDataset::WriteBytesUpTo(uint64_t offset, size_t length, const void* buf, bool grow_rows) {
  size_t written = 0;
  Status done = Exclusively([&]() -> Status {
    const StoreDatasetInfo si = info();
    const DatasetInfo& d = si.dataset;
    const uint64_t item = ItemSize(d.dtype);
    const uint64_t size = d.num_elements * item;
    const uint64_t row_bytes = RowElements(d) * item;
    const bool can_grow = grow_rows && d.length_resizable && !d.shape.empty() && row_bytes != 0;
    uint64_t limit = size;
    if (can_grow) {
      const uint64_t max_rows = std::min<uint64_t>(d.max_shape[0], static_cast<uint64_t>(INT64_MAX) / row_bytes);
      limit = std::max(size, max_rows * row_bytes);
    }
    if (offset >= limit || length == 0) {
      if (length == 0) return Status::OK();
      return Status::OutOfRange(path() + ": write of " + std::to_string(length) + " bytes at offset " +
                                std::to_string(offset) + " reaches past the end (" + std::to_string(size) + " bytes)");
    }
    if (length > limit - offset) length = static_cast<size_t>(limit - offset);
    const uint64_t end = offset + length;
    const bool grows = end > size;
    if (grows) {
      // Whole rows; the rest of the last row and any gap read as fill.
      const uint64_t rows = (end + row_bytes - 1) / row_bytes;
      SLABFS_RETURN_IF_ERROR(Resize(rows));
    }
    // A write that grew the dataset and then failed (a full disk) takes
    // the growth back, as after any failed write(2).
    auto undo = [&](Status s) {
      if (!grows) return s;
      Status back = Resize(d.shape[0]);
      return back.ok() ? s : s.WithContext("and the dataset stays grown: " + back.message());
    };
    const uint64_t first = offset / item, last = (end + item - 1) / item;
    const char* in = static_cast<const char*>(buf);
    std::vector<char> image;
    if (offset % item != 0 || end % item != 0) {
      // Partial elements at either end: read, patch, write as one image.
      image.resize((last - first) * item);
      Status s;
      if (offset % item != 0) s = ReadElements(first, 1, image.data());
      if (s.ok() && end % item != 0 && (last - 1 != first || offset % item == 0))
        s = ReadElements(last - 1, 1, image.data() + image.size() - item);
      if (!s.ok()) return undo(std::move(s));
      std::memcpy(image.data() + offset % item, in, length);
      in = image.data();
    }
    const StoreDatasetInfo now = info();
    for (const engine::LinearBox& b : engine::DecomposeLinear(now.dataset.shape, first, last - first)) {
      Status s = Write(b.box, in + b.offset * item);
      if (!s.ok()) return undo(std::move(s));
    }
    written = length;
    return Status::OK();
  });
  if (!done.ok()) return Err(std::move(done));
  return written;
}

Status WritableStoreDataset::SetSizeBytes(uint64_t size) {
  return Exclusively([&]() -> Status {
    const StoreDatasetInfo si = info();
    const DatasetInfo& d = si.dataset;
    const uint64_t item = ItemSize(d.dtype);
    const uint64_t current = d.num_elements * item;
    if (size == current) return Status::OK();
    if (!d.length_resizable || d.shape.empty()) {
      return Status::InvalidArgument(path() + ": its first dimension cannot change, so its size stays " +
                                     std::to_string(current) + " bytes");
    }
    const uint64_t row_bytes = RowElements(d) * item;
    if (row_bytes == 0 || size % row_bytes != 0) {
      return Status::InvalidArgument(path() + ": " + std::to_string(size) + " bytes is not a whole number of rows of " +
                                     std::to_string(row_bytes) + " bytes");
    }
    const uint64_t rows = size / row_bytes;
    if (rows > d.max_shape[0]) {
      return Status::OutOfRange(path() + ": " + std::to_string(rows) + " rows is more than the maximum " +
                                std::to_string(d.max_shape[0]));
    }
    return Resize(rows);
  });
}

}  // namespace slabfs
