// Typed attributes in the extended-attribute view.
//
// user.NAME shows an attribute as text (Attribute::ToText: "m/s", "0.5",
// "1,2,3"), the form people read and write with getfattr and setfattr. A
// number does not survive as text alone: cp -a, tar --xattrs and rsync -X
// set it back as text, and a copy's scale_factor or _FillValue would be a
// string. So each numeric attribute also shows user.slab.type.NAME: its
// numpy dtype and, for more than one element, its length ("f8", "i2[3]").
// The tools copy both names, in whichever order they list or sort them:
//   - user.slab.type.NAME set while NAME holds text that reads as that
//     type: NAME becomes that type at once;
//   - otherwise (no NAME yet, or a value that does not read as the type)
//     the type waits for NAME's next value (AttrTypeKeeper), which must
//     read as that type (EINVAL otherwise);
//   - user.NAME set with no type waiting keeps the type NAME already has
//     when the text reads as that type without loss (rsync -X sets only
//     the names whose values differ), else NAME is a string;
//   - removing user.slab.type.NAME makes NAME a string.
// String attributes have no user.slab.type.NAME.
#ifndef SLABFS_FUSEFS_ATTR_TYPES_H_
#define SLABFS_FUSEFS_ATTR_TYPES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "slabfs/types.h"

namespace slabfs::fusefs {

inline constexpr std::string_view kTypePrefix = "user.slab.type.";

// The type of a numeric attribute as user.slab.type.NAME gives it.
struct AttrType {
  DType dtype = DType::kF8;
  std::optional<uint64_t> count;  // "[N]": exactly N elements; else any
};

// "f8" for one element, "i2[3]" for three; "" for a string attribute.
std::string FormatAttrType(const Attribute& a);

// "f8", "<f8", "float64", "i2[3]" (blanks and a trailing newline or NUL
// ignored); InvalidArgument otherwise.
Result<AttrType> ParseAttrType(std::string_view text);

// `text` as an attribute of type t: one or more numbers separated by ',',
// each read as t.dtype, as many as t.count says if it says. InvalidArgument
// naming the value otherwise, or past kMaxAttributeBytes.
Result<Attribute> ParseTypedValue(const AttrType& t, std::string_view text);

// `text` as numbers of dtype t if it reads so without loss (an f4 reads
// each number as f8 would), else nullopt: how a new value keeps the type
// its attribute has.
std::optional<Attribute> ReadAsKnownType(DType t, std::string_view text);

// Types set as user.slab.type.NAME that wait for NAME's value, per object
// and name. Memory only, for this mount: an entry lives until the value
// comes, the object is removed, or `window` passes (and at most a few
// thousand are kept, oldest dropped first). Thread-safe; its mutex is a
// leaf (no engine call is made under it).
class AttrTypeKeeper {
 public:
  using Clock = std::chrono::steady_clock;
  explicit AttrTypeKeeper(Clock::duration window = std::chrono::seconds(60)) : window_(window) {}

  // Type t waits for the value of attribute `name` of object `id`.
  void Wait(ObjectId id, std::string_view name, AttrType t);
  // The type waiting for that value, if any, taken.
  std::optional<AttrType> Take(ObjectId id, std::string_view name);
  // Drops the waiting type; true if there was one.
  bool Drop(ObjectId id, std::string_view name);
  // Object `id` was removed.
  void Forget(ObjectId id);

 private:
  struct Waiting {
    Clock::time_point when;
    AttrType type;
  };
  void PruneLocked(Clock::time_point now);

  const Clock::duration window_;
  std::mutex mu_;  // a leaf: guards waiting_
  std::map<std::pair<ObjectId, std::string>, Waiting> waiting_;
};

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_ATTR_TYPES_H_
