#include "fusefs/layout_ops.h"

#include <cerrno>
#include <set>
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
// it. An empty dataset (0 bytes) takes any layout; one of another size
// keeps its bytes (Dataset::Relayout), so the layout must hold exactly as
// many, and with `fit_rows` a layout whose first dimension can change
// takes the length the bytes give (whole rows): a copy of a growable
// dataset that gained rows after its user.slab.* fields were read.
Result<DatasetOptions> FittingLayout(const DatasetInfo& info, const LayoutEdit& edit, bool fit_rows) {
  SLABFS_ASSIGN_OR_RETURN(DatasetOptions o, ResolveLayout(info, info.size_bytes, edit));
  if (info.size_bytes == 0 || BytesOf(o) == info.size_bytes) return o;
  if (fit_rows) {
    if (std::optional<DatasetOptions> fitted = WithLengthOf(o, info.size_bytes)) return std::move(*fitted);
  }
  return Err(Status::InvalidArgument(fmt::format("the layout {} {} holds {} bytes, the file {}", DTypeName(o.dtype),
                                                 FormatDims(o.shape), BytesOf(o), info.size_bytes)));
}

// What ApplyStaged did.
struct Applied {
  bool done = false;    // the dataset has the layout the fields describe
  std::string waiting;  // else why not yet
};

// Gives new file `ds` the layout its staged fields describe, if they
// describe one yet that its bytes fit. Fields come one by one in whatever
// order a tool sets them (rsync sorts them, so chunks come before shape),
// so a combination that does not hold together yet is no error: it waits
// for more fields. Errors are those of the relayout itself (a full disk,
// a damaged chunk); nothing changes then.
Result<Applied> ApplyStaged(Dataset& ds, const LayoutEdit& staged, bool fit_rows) {
  const DatasetInfo info = ds.info();
  auto layout = FittingLayout(info, staged, fit_rows);
  if (!layout) return Applied{false, layout.error().message()};
  if (SameLayout(info, *layout)) return Applied{true, {}};
  Status s = ds.Relayout(*layout);
  if (s.code() == Code::kInvalidArgument) return Applied{false, s.message()};
  if (!s.ok()) return Err(s);
  return Applied{true, {}};
}

// The items of a user.slab.layout value ("key=value", spaces around each
// trimmed), without its index field.
std::set<std::string> ItemsWithoutIndex(std::string_view layout) {
  std::set<std::string> out;
  size_t at = 0;
  while (at <= layout.size()) {
    size_t end = layout.find(';', at);
    if (end == std::string_view::npos) end = layout.size();
    std::string_view item = layout.substr(at, end - at);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty() && !item.starts_with("index=")) out.emplace(item);
    at = end + 1;
  }
  return out;
}

// Whether layout `value` says nothing but what `shown` says, the index
// aside (a store has none to choose).
bool SaysNothingNew(std::string_view shown, std::string_view value) {
  const std::set<std::string> have = ItemsWithoutIndex(shown);
  for (const std::string& item : ItemsWithoutIndex(value))
    if (!have.contains(item)) return false;
  return true;
}

// For a dataset emptied by O_TRUNC and written (cp -a over it), whose
// size was padded to whole rows of its own layout past the `written` bytes
// the copy wrote: gives it the layout its staged fields describe if that
// holds exactly those bytes. Through a byte stream of them (u1, growable),
// as the rows of the old layout cannot be cut at a byte.
Result<Applied> ApplyStagedToWritten(Dataset& ds, const LayoutEdit& staged, uint64_t written) {
  const DatasetInfo info = ds.info();
  auto layout = ResolveLayout(info, written, staged);
  if (!layout) return Applied{false, layout.error().message()};
  if (BytesOf(*layout) != written) {
    return Applied{false, fmt::format("the layout {} {} holds {} bytes, the copy wrote {}", DTypeName(layout->dtype),
                                      FormatDims(layout->shape), BytesOf(*layout), written)};
  }
  const DatasetOptions bytes{.dtype = DType::kU1, .shape = {info.size_bytes}, .max_shape = {kUnlimited}};
  SLABFS_RETURN_IF_ERROR_R(ds.Relayout(bytes));
  SLABFS_RETURN_IF_ERROR_R(ds.SetSizeBytes(written));
  SLABFS_RETURN_IF_ERROR_R(ds.Relayout(*layout));
  return Applied{true, {}};
}

}  // namespace

int SetStoreLayoutXattr(Filesystem& fs, fuse_ino_t ino, std::string_view field, std::string_view value) {
  const std::string op = fmt::format("setxattr user.slab.{}", field);
  const std::string why = fmt::format("user.slab.* of a {} store's dataset is read-only metadata", fs.store.format());
  if (fs.writer == nullptr) return Refuse(op, Describe(fs, ino), Status::PermissionDenied(why));
  auto info = fs.store.Stat(ino);
  if (!info) return Refuse(op, Describe(fs, ino), info.error());
  if (info->kind != ObjectKind::kDataset) {
    return Refuse(op, Describe(fs, ino), Status::PermissionDenied("groups have no user.slab.*"));
  }
  if (field == "stored" || field == "defined") {
    Log().debug("{} {}: ignored, a figure", op, Describe(fs, ino));
    return 0;
  }
  // A store finds its chunks its own way (a Zarr chunk by its key): there
  // is no chunk index to choose, so the index a copy of the dataset in a
  // container reports (cp -a, rsync -X back from it) changes nothing.
  if (field == "index") {
    Log().debug("{} {}: ignored, a store has no chunk index to choose", op, Describe(fs, ino));
    return 0;
  }
  auto ds = OpenFileData(fs, ino);
  if (!ds) return Refuse(op, Describe(fs, ino), ds.error());
  auto now = SlabXattrValue(ds->info(), field);
  if (!now) {
    return Refuse(op, Describe(fs, ino),
                  Status::PermissionDenied(fmt::format("user.slab.{} is not a layout field", field)));
  }
  if (*now == value) return 0;
  if (field == "layout" && SaysNothingNew(*now, value)) return 0;
  return Refuse(op, Describe(fs, ino),
                Status::PermissionDenied(fmt::format("{} (user.slab.{} is {})", why, field, *now)));
}

int SetLayoutXattr(Filesystem& fs, fuse_ino_t ino, std::string_view field, std::string_view value) {
  const std::string op = fmt::format("setxattr user.slab.{}", field);
  if (field == "stored" || field == "defined") {
    // Figures, not settings: cp -a, rsync -X and tar --xattrs copy them
    // with the rest, and the copy's own figures follow from its data.
    Log().debug("{} {}: ignored, a figure", op, Describe(fs, ino));
    return 0;
  }
  if (!IsLayoutField(field)) {
    return Refuse(op, Describe(fs, ino),
                  Status::PermissionDenied(fmt::format("user.slab.{} is not a layout field", field)));
  }
  auto ds = fs.container->OpenDataset(ino);
  if (!ds) return Refuse(op, Describe(fs, ino), ds.error());
  const DatasetInfo info = ds->info();
  // A new file typed while empty (tar --xattrs) is fixed once it holds
  // data, like any other dataset.
  const bool is_new = fs.layouts.IsNew(ino) && !(info.allocated_chunks != 0 && fs.layouts.TypedWhileEmpty(ino));
  if (!is_new) {
    // The value it has already: nothing to do (cp -a and rsync -X copy
    // every user.* name, these among them).
    if (field == "layout" ? FormatLayout(info) == value : [&] {
          auto now = SlabXattrValue(info, field);
          return now && *now == value;
        }()) {
      return 0;
    }
    if (info.allocated_chunks != 0) {
      return Refuse(op, Describe(fs, ino),
                    Status::PermissionDenied(fmt::format(
                        "the layout of a dataset holding data is fixed ({}); user.slab.* layout fields can be "
                        "set while it stores nothing, or on a file this mount created",
                        DescribeLayout(info))));
    }
    // Nothing stored: every call stands on its own, applied at once.
    LayoutEdit edit;
    Status added = AddLayoutField(field, value, &edit);
    if (!added.ok()) return Refuse(op, Describe(fs, ino), added);
    auto layout = FittingLayout(info, edit, false);
    if (!layout) return Refuse(op, Describe(fs, ino), layout.error());
    Status s = ds->Relayout(*layout);
    if (!s.ok()) return Refuse(op, Describe(fs, ino), s);
    Log().debug("{} {}: now {}", op, Describe(fs, ino), DescribeLayout(ds->info()));
    CommitChange(fs, op, Describe(fs, ino));
    return 0;
  }
  // A new file: the fields given so far are kept together (cp -a, mv,
  // rsync -X and tar --xattrs copy them one by one, in no set order) and
  // applied whenever they describe a layout its bytes fit: at once while
  // it holds no data (tar sets them before it writes), else once it is
  // not open (rsync sets them by path after the close), else at its last
  // close (cp -a and mv set them through the descriptor). A bad value is
  // EINVAL; a combination that does not hold together yet waits.
  LayoutEdit edit = fs.layouts.Staged(ino);
  Status added = AddLayoutField(field, value, &edit);
  if (!added.ok()) return Refuse(op, Describe(fs, ino), added);
  fs.layouts.SetStaged(ino, edit);
  const bool empty = info.allocated_chunks == 0 && (info.size_bytes == 0 || fs.layouts.TypedWhileEmpty(ino));
  if (!empty && fs.inodes.OpenHandles(ino) > 0) {
    Log().debug("{} {}: staged until the last close", op, Describe(fs, ino));
    return 0;
  }
  auto applied = ApplyStaged(*ds, edit, !fs.layouts.NeedsExactFit(ino));
  if (!applied) return Refuse(op, Describe(fs, ino), applied.error());
  if (!applied->done) {
    Log().debug("{} {}: staged: {}", op, Describe(fs, ino), applied->waiting);
    return 0;
  }
  fs.layouts.MarkTyped(ino);
  if (empty) fs.layouts.MarkTypedWhileEmpty(ino);
  Log().debug("{} {}: now {}", op, Describe(fs, ino), DescribeLayout(ds->info()));
  CommitChange(fs, op, Describe(fs, ino));
  return 0;
}

int KeepLayoutOnReplace(Filesystem& fs, ObjectId src, ObjectId dst, std::string_view what) {
  auto src_ds = fs.container->OpenDataset(src);
  auto dst_ds = fs.container->OpenDataset(dst);
  if (!src_ds) return Refuse("rename", what, src_ds.error());
  if (!dst_ds) return Refuse("rename", what, dst_ds.error());
  const DatasetInfo dst_info = dst_ds->info();
  const LayoutEdit staged = fs.layouts.Staged(src);
  if (!fs.layouts.IsUntypedNew(src) || !staged.empty()) {
    // A typed dataset replaces another: POSIX. Say so when the type changes,
    // and loudly when the file was given user.slab.* fields that its bytes
    // never fitted: the replaced dataset's type is lost.
    if (!staged.empty() && fs.layouts.IsNew(src)) {
      // Set by path after the close, the fields may still wait for the
      // release, which the kernel sends after close(2) has returned.
      auto applied = ApplyStaged(*src_ds, staged, !fs.layouts.NeedsExactFit(src));
      if (!applied) return Refuse("rename", what, applied.error().WithContext("applying user.slab.*"));
      if (!applied->done) {
        Log().warn(
            "rename {}: the user.slab.* fields it was given do not fit its {} bytes ({}); "
            "it replaces {} as {}",
            what, src_ds->size_bytes(), applied->waiting, DescribeLayout(dst_info), DescribeLayout(src_ds->info()));
        return 0;
      }
      fs.layouts.MarkTyped(src);
    }
    const DatasetInfo src_info = src_ds->info();
    if (!SameLayout(dst_info, OptionsOf(src_info))) {
      Log().info("rename {}: replaces {} with {}", what, DescribeLayout(dst_info), DescribeLayout(src_info));
    }
    return 0;
  }
  auto kept = CaptureLayout(*fs.container, dst, *dst_ds);
  if (!kept) return Refuse("rename", what, kept.error());
  auto adopted = AdoptLayout(*fs.container, *src_ds, *kept);
  if (!adopted) return Refuse("rename", what, adopted.error().WithContext("keeping the layout"));
  if (*adopted) {
    fs.layouts.Settle(src);
    Log().debug("rename {}: keeps the layout {}", what, DescribeLayout(dst_info));
  } else {
    Log().info(
        "rename {}: its {} bytes do not fit the layout {} of the dataset it replaces; "
        "it stays a byte stream (u1)",
        what, src_ds->size_bytes(), DescribeLayout(dst_info));
  }
  return 0;
}

int FinishNewFile(Filesystem& fs, fuse_ino_t ino, const Dataset& handle) {
  if (!fs.layouts.HasWork(ino) || fs.inodes.OpenHandles(ino) > 1) return 0;
  Dataset ds = handle;
  const LayoutEdit staged = fs.layouts.Staged(ino);
  if (!staged.empty()) {
    // Fields given explicitly win over the layout of the name's former
    // dataset. They stay staged: the file stays new for a while, and a
    // field set after this close (rsync -X sets them by path once the
    // file is closed, in a race with this release) adds to them.
    fs.layouts.TakePending(ino);
    const bool exact = fs.layouts.NeedsExactFit(ino);
    auto applied = ApplyStaged(ds, staged, !exact);
    if (applied && !applied->done && exact) {
      // The end the copy wrote, before its row was padded (the partial row
      // ends after this).
      const uint64_t written = fs.inodes.ReportedSize(ino, ds.size_bytes());
      if (written < ds.size_bytes()) applied = ApplyStagedToWritten(ds, staged, written);
    }
    if (!applied) return Refuse("close", Describe(fs, ino), applied.error().WithContext("applying user.slab.*"));
    if (!applied->done) {
      if (fs.layouts.NeedsExactFit(ino)) {
        // Emptied by O_TRUNC and written (cp -a over it): the copy's layout
        // is not what its bytes make; they stay in the dataset's own.
        Log().warn(
            "close {}: the user.slab.* fields it was given ({}) do not describe its {} bytes; they are read as {}",
            Describe(fs, ino), applied->waiting, ds.size_bytes(), DescribeLayout(ds.info()));
      } else {
        Log().info("close {}: the user.slab.* fields given so far do not fit its {} bytes yet: {}", Describe(fs, ino),
                   ds.size_bytes(), applied->waiting);
      }
      return 0;
    }
    fs.layouts.MarkTyped(ino);
    Log().debug("close {}: now {}", Describe(fs, ino), DescribeLayout(ds.info()));
    return 0;
  }
  std::optional<KeptLayout> kept = fs.layouts.TakePending(ino);
  if (!kept) return 0;
  auto adopted = AdoptLayout(*fs.container, ds, *kept);
  if (!adopted) return Refuse("close", Describe(fs, ino), adopted.error().WithContext("keeping the layout"));
  if (*adopted) {
    fs.layouts.Settle(ino);
    Log().debug("close {}: keeps the layout {} of the dataset it replaced", Describe(fs, ino),
                DescribeLayout(kept->info));
  } else if (ds.size_bytes() == 0) {
    // Nothing written yet: a shell's `cmd > file` opens the file, moves the
    // descriptor to the command's output and closes the first one before
    // the command writes. The layout waits for a close with bytes.
    Log().debug("close {}: empty; the layout {} of the dataset it replaced waits for its bytes", Describe(fs, ino),
                DescribeLayout(kept->info));
    fs.layouts.KeepPending(ino, std::move(*kept));
  } else {
    Log().info(
        "close {}: its {} bytes do not fit the layout {} of the dataset it replaced ({}); "
        "it stays a byte stream (u1)",
        Describe(fs, ino), ds.size_bytes(), DescribeLayout(kept->info), kept->path);
  }
  return 0;
}

}  // namespace slabfs::fusefs
