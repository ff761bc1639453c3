#include "fusefs/layout_ops.h"

#include <cerrno>
#include <string>

#include <fmt/format.h>

#include "fusefs/layout_edit.h"
#include "fusefs/layout_keeper.h"
#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/xattr.h"

namespace slabfs::fusefs {
namespace {

uint64_t BytesOf(const DatasetOptions& o) {
  slabfs_u128 n = ItemSize(o.dtype);
  for (uint64_t d : o.shape) n *= d;
  return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
}

// The layout `edit` asks for on top of `info`, if the dataset's bytes fit
// it. A dataset that stores nothing (every element the fill value) loses
// nothing to any layout, whatever its size.
Result<DatasetOptions> FittingLayout(const DatasetInfo& info, const LayoutEdit& edit) {
  SLABFS_ASSIGN_OR_RETURN(DatasetOptions o, ResolveLayout(info, info.size_bytes, edit));
  if (info.allocated_chunks != 0 && BytesOf(o) != info.size_bytes) {
    return Err(Status::InvalidArgument(fmt::format("the layout {} {} holds {} bytes, the file {}",
                                                   DTypeName(o.dtype), FormatDims(o.shape), BytesOf(o),
                                                   info.size_bytes)));
  }
  return o;
}

}  // namespace

int SetLayoutXattr(Filesystem& fs, fuse_ino_t ino, std::string_view field, std::string_view value) {
  const std::string op = fmt::format("setxattr user.slab.{}", field);
  auto ds = fs.container.OpenDataset(ino);
  if (!ds) return Refuse(op, Describe(fs, ino), ds.error());
  const DatasetInfo info = ds->info();
  // The value it has already: nothing to do (cp -a and rsync -X copy every
  // user.* name, these among them).
  if (field == "layout" ? FormatLayout(info) == value : [&] {
        auto now = SlabXattrValue(info, field, [&] { return ds->CountDefined(); });
        return now && *now == value;
      }()) {
    return 0;
  }
  const bool is_new = fs.layouts.IsNew(ino);
  if (!IsLayoutField(field)) {
    if (is_new && (field == "stored" || field == "defined")) return 0;  // figures of a copied dataset
    return Refuse(op, Describe(fs, ino),
                  Status::PermissionDenied(fmt::format("user.slab.{} is a figure, not a layout field", field)));
  }
  const bool holds_data = info.allocated_chunks != 0;
  if (holds_data && !is_new) {
    return Refuse(op, Describe(fs, ino),
                  Status::PermissionDenied(fmt::format(
                      "the layout of a dataset holding data is fixed ({}); user.slab.* layout fields can be "
                      "set while it stores nothing, or on a file this mount created",
                      DescribeLayout(info))));
  }
  LayoutEdit edit = fs.layouts.Staged(ino);
  Status added = AddLayoutField(field, value, &edit);
  if (!added.ok()) return Refuse(op, Describe(fs, ino), added);
  auto layout = FittingLayout(info, edit);
  if (!holds_data) {
    // Nothing stored: every call stands on its own, applied at once.
    if (!layout) return Refuse(op, Describe(fs, ino), layout.error());
    Status s = ds->Relayout(*layout);
    if (!s.ok()) return Refuse(op, Describe(fs, ino), s);
    fs.layouts.Settle(ino);
    Log().debug("{} {}: now {}", op, Describe(fs, ino), DescribeLayout(ds->info()));
    CommitChange(fs, op, Describe(fs, ino));
    return 0;
  }
  // A new file holding data (cp -a, rsync -X copy the fields one by one, in
  // no set order): the fields given so far are kept together, and applied
  // whenever they describe a layout its bytes fit and the file is not open
  // (else at its last close). The file stays new, so the next field adds
  // to them.
  fs.layouts.SetStaged(ino, edit);
  if (!layout || fs.OpenHandles(ino) > 0) {
    Log().debug("{} {}: staged{}", op, Describe(fs, ino),
                layout ? " until the last close" : ": " + layout.error().message());
    return 0;
  }
  if (SameLayout(info, *layout)) return 0;
  Status s = ds->Relayout(*layout);
  if (!s.ok()) return Refuse(op, Describe(fs, ino), s);
  Log().debug("{} {}: now {}", op, Describe(fs, ino), DescribeLayout(ds->info()));
  CommitChange(fs, op, Describe(fs, ino));
  return 0;
}

int KeepLayoutOnReplace(Filesystem& fs, ObjectId src, ObjectId dst, std::string_view what) {
  auto src_ds = fs.container.OpenDataset(src);
  auto dst_ds = fs.container.OpenDataset(dst);
  if (!src_ds) return Refuse("rename", what, src_ds.error());
  if (!dst_ds) return Refuse("rename", what, dst_ds.error());
  const DatasetInfo dst_info = dst_ds->info();
  if (!fs.layouts.IsNew(src) || !fs.layouts.Staged(src).empty()) {
    // A typed dataset replaces another: POSIX. Say so when the type changes.
    const DatasetInfo src_info = src_ds->info();
    if (!SameLayout(dst_info, OptionsOf(src_info))) {
      Log().info("rename {}: replaces {} with {}", what, DescribeLayout(dst_info), DescribeLayout(src_info));
    }
    return 0;
  }
  auto kept = CaptureLayout(fs.container, dst, *dst_ds);
  if (!kept) return Refuse("rename", what, kept.error());
  auto adopted = AdoptLayout(fs.container, *src_ds, *kept);
  if (!adopted) return Refuse("rename", what, adopted.error().WithContext("keeping the layout"));
  if (*adopted) {
    fs.layouts.Settle(src);
    Log().debug("rename {}: keeps the layout {}", what, DescribeLayout(dst_info));
  } else {
    Log().info("rename {}: its {} bytes do not fit the layout {} of the dataset it replaces; "
               "it stays a byte stream (u1)",
               what, src_ds->size_bytes(), DescribeLayout(dst_info));
  }
  return 0;
}

int FinishNewFile(Filesystem& fs, fuse_ino_t ino, const Dataset& handle) {
  if (!fs.layouts.HasWork(ino) || fs.OpenHandles(ino) > 1) return 0;
  Dataset ds = handle;
  const LayoutEdit staged = fs.layouts.Staged(ino);
  if (!staged.empty()) {
    // Fields given explicitly win over the layout of the name's former
    // dataset. They stay staged: the file stays new for a while, and a
    // field set after this close (rsync -X sets them by path once the
    // file is closed, in a race with this release) adds to them.
    fs.layouts.TakePending(ino);
    const DatasetInfo info = ds.info();
    auto layout = FittingLayout(info, staged);
    if (!layout) {
      Log().info("close {}: the user.slab.* fields given so far do not fit its bytes yet: {}",
                 Describe(fs, ino), layout.error().message());
      return 0;
    }
    if (SameLayout(info, *layout)) return 0;
    Status s = ds.Relayout(*layout);
    if (!s.ok()) return Refuse("close", Describe(fs, ino), s.WithContext("applying user.slab.*"));
    Log().debug("close {}: now {}", Describe(fs, ino), DescribeLayout(ds.info()));
    return 0;
  }
  std::optional<KeptLayout> kept = fs.layouts.TakePending(ino);
  if (!kept) return 0;
  auto adopted = AdoptLayout(fs.container, ds, *kept);
  if (!adopted) return Refuse("close", Describe(fs, ino), adopted.error().WithContext("keeping the layout"));
  if (*adopted) {
    fs.layouts.Settle(ino);
    Log().debug("close {}: keeps the layout {} of the dataset it replaced", Describe(fs, ino),
                DescribeLayout(kept->info));
  } else {
    Log().info("close {}: its {} bytes do not fit the layout {} of the dataset it replaced ({}); "
               "it stays a byte stream (u1)",
               Describe(fs, ino), ds.size_bytes(), DescribeLayout(kept->info), kept->path);
  }
  return 0;
}

}  // namespace slabfs::fusefs
