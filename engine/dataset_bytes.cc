// A dataset as a run of elements in C order (ReadElements, WriteElements)
// and as the bytes of those elements (ReadBytes, WriteBytes, and the
// RowElements that SetSizeBytes uses): what the element-range API and the
// mount's byte view reach, cut into boxes and handed to the hyperslab
// paths of dataset.cc.
#include <algorithm>
#include <cstring>

#include "engine/container_impl.h"
#include "engine/selection/hyperslab.h"
#include "engine/util/math.h"

namespace slabfs::engine {

// ------------------------------------------------------- element ranges

Status DatasetState::ForEachLinearBox(uint64_t first, uint64_t count, Code out_of_range,
                                      const std::function<Status(const TransferPlan&, uint64_t)>& fn) {
  const uint64_t n = num_elements();
  if (first > n || count > n - first)
    return Status(out_of_range, what() + ": elements " + std::to_string(first) + "+" + std::to_string(count) +
                                    " outside " + std::to_string(n));
  for (const LinearBox& b : DecomposeLinear(meta_.shape, first, count)) {
    TransferPlan plan;
    SLABFS_RETURN_IF_ERROR(plan.Build(meta_.shape, meta_.chunks, b.box, nullptr, &meta_.max_shape));
    SLABFS_RETURN_IF_ERROR(fn(plan, b.offset * item_size_));
  }
  return Status::OK();
}

Status DatasetState::ReadElementsLocked(uint64_t first, uint64_t count, char* buf) {
  return ForEachLinearBox(first, count, Code::kInvalidArgument,
                          [&](const TransferPlan& plan, uint64_t off)
                              REQUIRES_SHARED(rw_) { return ReadLocked(plan, buf + off); });
}

Status DatasetState::WriteElementsLocked(uint64_t first, uint64_t count, const char* buf) {
  const uint64_t n = num_elements();
  if (first > n || count > n - first)
    return Status::OutOfRange(what() + ": elements " + std::to_string(first) + "+" + std::to_string(count) +
                              " outside " + std::to_string(n));
  // Up to 2*rank-1 boxes: the room for all of them is checked before the
  // first changes anything, and earlier changes are shed, so a write
  // refused for a full disk (NoSpace) or a failed shed leaves every element
  // as it was.
  std::vector<LinearBox> boxes = DecomposeLinear(meta_.shape, first, count);
  std::vector<TransferPlan> plans(boxes.size());
  uint64_t touched = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    SLABFS_RETURN_IF_ERROR(plans[i].Build(meta_.shape, meta_.chunks, boxes[i].box, nullptr, &meta_.max_shape));
    touched += plans[i].chunks_touched();
  }
  SLABFS_RETURN_IF_ERROR(CheckRoomForChunks(touched));
  SLABFS_RETURN_IF_ERROR(MakeRoom());
  for (size_t i = 0; i < boxes.size(); ++i)
    SLABFS_RETURN_IF_ERROR(WriteLocked(plans[i], buf + boxes[i].offset * item_size_, /*room_checked=*/true));
  return Status::OK();
}

Status DatasetState::ReadElements(uint64_t first, uint64_t count, void* buf) {
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR(CheckPresent());
  ReaderLock lock(rw_);
  return ReadElementsLocked(first, count, static_cast<char*>(buf));
}

Status DatasetState::WriteElements(uint64_t first, uint64_t count, const void* buf) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  return WriteElementsLocked(first, count, static_cast<const char*>(buf));
}

// ----------------------------------------------------------- byte view

Result<size_t> DatasetState::ReadBytes(uint64_t offset, size_t length, void* buf) {
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR_R(CheckPresent());
  ReaderLock lock(rw_);
  const uint64_t size = num_elements() * item_size_;
  if (offset >= size || length == 0) return size_t{0};
  length = static_cast<size_t>(std::min<uint64_t>(length, size - offset));
  char* out = static_cast<char*>(buf);
  const uint64_t isz = item_size_;
  uint64_t e = offset / isz;
  size_t pos = 0;
  char tmp[8];
  if (offset % isz != 0) {  // a partial element at the start
    SLABFS_RETURN_IF_ERROR_R(ReadElementsLocked(e, 1, tmp));
    size_t skip = offset % isz;
    size_t n = std::min<size_t>(isz - skip, length);
    std::memcpy(out, tmp + skip, n);
    pos = n;
    ++e;
  }
  uint64_t full = (length - pos) / isz;
  if (full > 0) {
    SLABFS_RETURN_IF_ERROR_R(ReadElementsLocked(e, full, out + pos));
    pos += full * isz;
    e += full;
  }
  if (pos < length) {  // a partial element at the end
    SLABFS_RETURN_IF_ERROR_R(ReadElementsLocked(e, 1, tmp));
    std::memcpy(out + pos, tmp, length - pos);
  }
  return length;
}

uint64_t DatasetState::RowElements() const {
  uint64_t n = 1;
  for (size_t d = 1; d < meta_.shape.size(); ++d) n *= meta_.shape[d];
  return n;
}

Status DatasetState::WriteBytes(uint64_t offset, size_t length, const void* buf, bool grow, size_t* written) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  const uint64_t isz = item_size_;
  const uint64_t size = num_elements() * isz;
  const Dims old_shape = meta_.shape;
  const uint64_t row_bytes = RowElements() * isz;
  const bool can_grow = grow && (meta_.flags & kDatasetFlagLengthResizable) != 0 && row_bytes != 0;
  if (written != nullptr && (offset > size || length > size - offset)) {
    // The largest size a write may reach: the maximum number of whole rows
    // (at most 2^63 bytes), or the size of a dataset that cannot grow.
    uint64_t limit = size;
    if (can_grow) {
      const uint64_t max_rows = std::min<uint64_t>(meta_.max_shape[0], static_cast<uint64_t>(INT64_MAX) / row_bytes);
      limit = std::max(size, max_rows * row_bytes);
    }
    if (offset < limit && length > limit - offset) length = static_cast<size_t>(limit - offset);
  }
  if (written != nullptr) *written = 0;
  bool grew = false;
  if (offset > size || length > size - offset) {
    if (!can_grow || offset > kUnlimited - length)
      return Status::OutOfRange(what() + ": write of " + std::to_string(length) + " bytes at offset " +
                                std::to_string(offset) + " reaches past the end (" + std::to_string(size) + " bytes)");
    // Grow the first dimension by whole rows; the rest of the last row and
    // any gap before the write read as the fill value.
    const uint64_t rows = CeilDiv(offset + length, row_bytes);
    if (static_cast<slabfs_u128>(rows) * row_bytes > static_cast<slabfs_u128>(INT64_MAX))
      return Status::OutOfRange(what() + ": write at offset " + std::to_string(offset) +
                                " would make the dataset larger than 2^63 bytes");
    if (rows > meta_.max_shape[0])
      return Status::OutOfRange(what() + ": write of " + std::to_string(length) + " bytes at offset " +
                                std::to_string(offset) + " needs " + std::to_string(rows) + " rows, more than the " +
                                "maximum " + std::to_string(meta_.max_shape[0]));
    // Shed before the growth: taking a growth back writes back the dirty
    // chunks, which a failed shed could not.
    SLABFS_RETURN_IF_ERROR(MakeRoom());
    Dims shape = meta_.shape;
    shape[0] = rows;
    SLABFS_RETURN_IF_ERROR(ResizeLocked(shape));
    grew = true;
  }
  Status s = WriteBytesInsideLocked(offset, length, static_cast<const char*>(buf));
  if (!s.ok() && grew) {
    // A write that grew the dataset and then failed (a full disk) takes
    // the growth back: the size stays what it was, as after any failed
    // write(2).
    Status back = ResizeLocked(old_shape);
    if (!back.ok()) s = s.WithContext("and the dataset stays grown: " + back.message());
  }
  if (s.ok() && written != nullptr) *written = length;
  return s;
}

Status DatasetState::WriteBytesInsideLocked(uint64_t offset, size_t length, const char* in) {
  const uint64_t isz = item_size_;
  if (length == 0) return Status::OK();
  if (offset % isz == 0 && length % isz == 0) return WriteElementsLocked(offset / isz, length / isz, in);
  // Partial elements at either end are read and patched into one
  // element-aligned image of the whole write, under the one write lock so
  // that no other write slips in between; the image is then written with
  // one call, so the write is refused whole (a full disk) or done whole.
  const uint64_t first = offset / isz;
  const uint64_t last = CeilDiv(offset + length, isz);  // one past the last element touched
  std::vector<char> image((last - first) * isz);
  if (offset % isz != 0) SLABFS_RETURN_IF_ERROR(ReadElementsLocked(first, 1, image.data()));
  if ((offset + length) % isz != 0 && (last - 1 != first || offset % isz == 0))
    SLABFS_RETURN_IF_ERROR(ReadElementsLocked(last - 1, 1, image.data() + image.size() - isz));
  std::memcpy(image.data() + offset % isz, in, length);
  return WriteElementsLocked(first, last - first, image.data());
}

}  // namespace slabfs::engine
