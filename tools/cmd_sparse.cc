#include "tools/cmd_sparse.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "slabfs/container.h"
#include "slabfs/slice.h"
#include "slabfs/store.h"
#include "tools/describe.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

std::vector<uint64_t> Starts(const Slab& s) {
  std::vector<uint64_t> v;
  for (const DimSlab& d : s.dims) v.push_back(d.start);
  return v;
}

// The defined elements of `ds` inside `sel`, in C order of their first
// element. Defined takes boxes only: a selection with steps asks for its
// bounding box and cuts each answer down to the selected indices.
Result<std::vector<Slab>> DefinedIn(const StoreDataset& ds, const Slab& sel, std::string_view path) {
  std::vector<Slab> out;
  if (sel.num_elements() == 0) return out;
  const bool box = IsBox(sel);
  auto boxes = ds.Defined(box ? sel : BoundingBox(sel));
  if (!boxes) return Err(AddContext(boxes.error(), path));
  // The engine joins the boxes of a region written across chunks.
  out.reserve(boxes->size());
  for (const Box& b : *boxes) {
    // A box selection needs no cutting, but the answer is checked against
    // it all the same: what is printed stays inside what was asked.
    std::optional<Slab> part = IntersectBox(sel, b.start, b.count);
    if (part) out.push_back(std::move(*part));
  }
  // Cutting moves first elements, which can change their C order.
  std::sort(out.begin(), out.end(), [](const Slab& a, const Slab& b) { return Starts(a) < Starts(b); });
  return out;
}

}  // namespace

Status RunErase(const EraseOptions& o, std::ostream& /*out*/) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  SLABFS_ASSIGN_OR_RETURN(std::vector<SliceItem> items, ParseSliceItems(o.slice));
  SLABFS_RETURN_IF_ERROR(ForeignFileStatus(o.file, /*changes=*/true));
  {
    // The dataset and the slice are checked read-only first: taking the
    // writer lock rewrites the lock record in the file, and a refused or
    // empty erase leaves the file exactly as it was. The slice is resolved
    // again under the lock, against the shape as it is then.
    SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> c, OpenForReading(o.file));
    auto ds = c->OpenDataset(o.path);
    if (!ds) return AddContext(ds.error(), o.path);
    SLABFS_ASSIGN_OR_RETURN(Slab sel, ResolveSlice(o.slice, items, ds->info().shape));
    if (sel.num_elements() == 0) return Status::OK();
  }
  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "erase"));
  auto ds = session.container().OpenDataset(o.path);
  if (!ds) return AddContext(ds.error(), o.path);
  SLABFS_ASSIGN_OR_RETURN(Slab sel, ResolveSlice(o.slice, items, ds->info().shape));
  if (sel.num_elements() > 0) SLABFS_RETURN_IF_ERROR(AddContext(ds->Erase(sel), o.path));
  return AddContext(session.Finish(), o.file);
}

Status RunDefined(const DefinedOptions& o, std::ostream& out) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  std::vector<SliceItem> items;
  if (o.slice) {
    SLABFS_ASSIGN_OR_RETURN(items, ParseSliceItems(*o.slice));
  }
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> c, OpenStoreForReading(o.file));
  auto ds = c->OpenDataset(o.path);
  if (!ds) return AddContext(ds.error(), o.path);
  const Dims shape = (*ds)->info().dataset.shape;
  Slab sel = Slab::All(shape);
  if (o.slice) {
    SLABFS_ASSIGN_OR_RETURN(sel, ResolveSlice(*o.slice, items, shape));
  }
  SLABFS_ASSIGN_OR_RETURN(std::vector<Slab> parts, DefinedIn(**ds, sel, o.path));

  uint64_t elements = 0;
  for (const Slab& p : parts) elements += p.num_elements();
  if (o.json) {
    const bool steps = !IsBox(sel);
    Json boxes = Json::array();
    for (const Slab& p : parts) {
      Json b;
      b["start"] = Starts(p);
      b["count"] = p.extents();
      if (steps) {
        Json step = Json::array();
        for (const DimSlab& d : p.dims) step.push_back(d.stride);
        b["step"] = std::move(step);
      }
      boxes.push_back(std::move(b));
    }
    Json j;
    j["boxes"] = std::move(boxes);
    j["elements"] = elements;
    out << j.dump() << '\n';
    return Status::OK();
  }
  for (const Slab& p : parts) out << '[' << FormatSlice(p) << "]\n";
  out << fmt::format("{} element{} defined in {} box{}\n", elements, elements == 1 ? "" : "s", parts.size(),
                     parts.size() == 1 ? "" : "es");
  return Status::OK();
}

void AddSparseCommands(CLI::App& app, CommandTable& table) {
  {
    auto o = std::make_shared<EraseOptions>();
    CLI::App* sub = app.add_subcommand("erase",
                                       "Make the elements of a slice undefined: they read as the fill value and "
                                       "their space is freed");
    sub->add_option("FILE", o->file, "container file")->required();
    sub->add_option("PATH", o->path, "absolute path of the dataset")->required();
    sub->add_option("SLICE", o->slice, "numpy slice, like 10:20,::2,5 or ...,-1 (: or ... erases everything)")
        ->required();
    table.Add(sub, [o](std::ostream& out) { return RunErase(*o, out); });
  }
  {
    auto o = std::make_shared<DefinedOptions>();
    CLI::App* sub =
        app.add_subcommand("defined", "List the defined elements of a dataset (or of a slice of it) as boxes");
    sub->add_flag("--json", o->json, "print {\"boxes\":[{\"start\":[...],\"count\":[...]},...],\"elements\":N}");
    sub->add_option("FILE", o->file, "container, HDF5 or netCDF-4 file")->required();
    sub->add_option("PATH", o->path, "absolute path of the dataset")->required();
    // CLI11 2.1 binds no std::optional: the callback fills it when given.
    sub->add_option_function<std::string>(
           "SLICE", [o](const std::string& v) { o->slice = v; },
           "numpy slice, like 10:20,::2,5 (default: the whole dataset)")
        ->type_name("TEXT");
    table.Add(sub, [o](std::ostream& out) { return RunDefined(*o, out); });
  }
}

}  // namespace slabfs::tools
