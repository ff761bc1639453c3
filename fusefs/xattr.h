// The extended-attribute view of an object.
//
//   user.slab.NAME  facts about a dataset: its layout (dtype, shape,
//                   maxshape, chunks, fill, filters, sparse, index, and all
//                   of them as "layout"; see layout_edit.h for when they can
//                   be set) and figures (stored, defined; read-only); on the
//                   mount's root directory, figures of the container (cache,
//                   space, generation) and the last refusal (last_error);
//                   read-only.
//   user.slab.type.NAME  the dtype and length of numeric attribute NAME
//                   ("f8", "i2[3]"), so that copies keep its type; see
//                   attr_types.h. Groups and datasets.
//   user.NAME       the object's slabfs attribute NAME, as text.
//   anything else   not supported (security.*, system.*, trusted.*).
//
// Pure functions: thread-safe.
#ifndef SLABFS_FUSEFS_XATTR_H_
#define SLABFS_FUSEFS_XATTR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fusefs/attr_types.h"
#include "slabfs/store.h"
#include "slabfs/types.h"

namespace slabfs::fusefs {

inline constexpr std::string_view kUserPrefix = "user.";
inline constexpr std::string_view kSlabPrefix = "user.slab.";
// XATTR_NAME_MAX: the kernel refuses longer names.
inline constexpr size_t kMaxXattrNameBytes = 255;

enum class XattrSpace {
  kType,   // user.slab.type.NAME: the type of attribute NAME
  kSlab,   // user.slab.*: metadata, read-only
  kUser,   // user.*: an attribute of the object
  kOther,  // another namespace
};

struct XattrName {
  XattrSpace space = XattrSpace::kOther;
  // kType: the part after "user.slab.type."; kSlab: after "user.slab.";
  // kUser: after "user."; kOther: all.
  std::string_view name;
};

XattrName ClassifyXattr(std::string_view full_name);

// The user.slab.* names a dataset has, in listing order.
const std::vector<std::string>& SlabXattrNames();

// Counts the dataset's defined elements (Dataset::CountDefined: for a dense
// dataset a walk of its stored chunks, so it is asked only for "defined").
using CountDefinedFn = std::function<Result<uint64_t>()>;

// The text of user.slab.<name> for a dataset, or NotFound for a name that
// is not one of SlabXattrNames(). "filters" is the canonical pipeline
// ("shuffle,deflate=6,checksum"), or "none" for a dataset without one;
// "stored" is the chunk bytes stored, after the filters; "defined" is
// count_defined's answer (InvalidArgument without one), its errors passed
// on.
Result<std::string> SlabXattrValue(const DatasetInfo& info, std::string_view name,
                                   const CountDefinedFn& count_defined = {});

// The text of user.slab.<name> of the root directory, or NotFound. These
// are read by name only and not listed: a listed value that changes by
// itself would be copied by rsync -X and cp -a, which then fail to set it
// back.
//   cache       the chunk cache's counters (CacheStats), "hits=12 misses=3
//               bytes_read=... bytes_written=... evictions=... bypass_reads=...
//               bypass_writes=... extent_reads=... resident_bytes=...
//               budget_bytes=..."
//   space       "file_bytes=... free_bytes=... held_bytes=... objects=..."
//   generation  the commit the mount reads (a follow mount's moves on)
//   last_error  `last_error` as given: the mount's last refusal with its
//               time and reason (LastRefusal, request.h), empty before one
//   format      the mounted store's format: "slab", "hdf5" (Store::format)
//   skipped     what the store could not show, one "PATH: REASON" line
//               each (Store::Skipped); empty for a slab container
Result<std::string> RootSlabXattrValue(const CacheStats& cache, const SpaceInfo& space, std::string_view name,
                                       std::string_view last_error = {}, std::string_view format = "slab",
                                       const std::vector<SkippedObject>& skipped = {});

// A listxattr reply: each name followed by a NUL.
std::string JoinXattrNames(const std::vector<std::string>& names);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_XATTR_H_
