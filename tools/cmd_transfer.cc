#include "tools/cmd_transfer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/algorithm/string/case_conv.hpp>
#include <boost/filesystem.hpp>

#include "slabfs/container.h"
#include "slabfs/npy.h"
#include "slabfs/store.h"
#include "tools/byte_stream.h"
#include "tools/convert/convert.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

// An import input after its header (if any) has been read.
struct Source {
  InputFile file;
  std::string pending;                 // data bytes read ahead while looking for a header
  std::optional<NpyHeader> npy;        // set for a .npy input
  std::optional<uint64_t> data_bytes;  // the size of the data, when the input is a regular file
};

Result<Source> OpenSource(const std::string& input) {
  SLABFS_ASSIGN_OR_RETURN(InputFile file, InputFile::Open(input));
  std::string head(kNpyMaxPreambleBytes, '\0');
  SLABFS_ASSIGN_OR_RETURN(size_t got, file.ReadFull(head.data(), head.size()));
  head.resize(got);

  Source src{std::move(file), std::string(), std::nullopt, std::nullopt};
  uint64_t header_bytes = 0;
  if (HasNpyMagic(head)) {
    auto length = NpyHeaderLength(head);
    if (!length) return Err(AddContext(length.error(), src.file.name()));
    std::string header = std::move(head);
    if (*length > header.size()) {
      size_t missing = *length - header.size();
      header.resize(*length);
      SLABFS_ASSIGN_OR_RETURN(size_t more, src.file.ReadFull(header.data() + header.size() - missing, missing));
      header.resize(header.size() - missing + more);
    }
    auto parsed = ParseNpyHeader(header);
    if (!parsed) return Err(AddContext(parsed.error(), src.file.name()));
    src.npy = std::move(*parsed);
    header_bytes = src.npy->header_bytes;
    if (header.size() > header_bytes) src.pending = header.substr(header_bytes);
  } else {
    src.pending = std::move(head);
  }
  if (src.file.size()) src.data_bytes = *src.file.size() - std::min(*src.file.size(), header_bytes);
  return src;
}

// Fills buf with n data bytes; fewer only at the end of the input.
Result<size_t> ReadData(Source& src, char* buf, size_t n) {
  size_t from_pending = std::min(n, src.pending.size());
  std::memcpy(buf, src.pending.data(), from_pending);
  src.pending.erase(0, from_pending);
  SLABFS_ASSIGN_OR_RETURN(size_t got, src.file.ReadFull(buf + from_pending, n - from_pending));
  return from_pending + got;
}

std::string TypeAndShape(DType t, const Dims& shape) {
  return fmt::format("{} of shape ({})", DTypeName(t), FormatDims(shape));
}

// Checks that the input fits the existing dataset `ds` at `path`.
Status CheckFits(const Source& src, const Dataset& ds, std::string_view path) {
  DatasetInfo info = ds.info();
  const std::string& name = src.file.name();
  if (src.npy) {
    const NpyHeader& h = *src.npy;
    if (h.dtype != info.dtype) {
      return Status::InvalidArgument(fmt::format("dtype mismatch: {} holds {} but {} is {}", name, DTypeName(h.dtype),
                                                 path, DTypeName(info.dtype)));
    }
    if (h.num_elements != info.num_elements) {
      return Status::InvalidArgument(
          fmt::format("size mismatch: {} holds {} elements (shape ({})) but {} holds {} ({})", name, h.num_elements,
                      FormatDims(h.shape), path, info.num_elements, TypeAndShape(info.dtype, info.shape)));
    }
  } else if (src.data_bytes && *src.data_bytes != info.size_bytes) {
    return Status::InvalidArgument(fmt::format("size mismatch: {} is {} bytes but {} ({}) is {} bytes", name,
                                               *src.data_bytes, path, TypeAndShape(info.dtype, info.shape),
                                               info.size_bytes));
  }
  return Status::OK();
}

// Checks that a .npy input holds as many data bytes as its header says.
Status CheckNpyDataSize(const Source& src) {
  if (!src.npy || !src.data_bytes || *src.data_bytes == src.npy->data_bytes) return Status::OK();
  return Status::InvalidArgument(fmt::format("{}: the .npy header promises {} data bytes ({}) but the file holds {}{}",
                                             src.file.name(), src.npy->data_bytes,
                                             TypeAndShape(src.npy->dtype, src.npy->shape), *src.data_bytes,
                                             *src.data_bytes < src.npy->data_bytes ? " (truncated)" : ""));
}

LayoutText LayoutOf(const ImportOptions& o) {
  return {.chunks = o.chunks,
          .fill = o.fill,
          .max_shape = o.max_shape,
          .index = o.index,
          .filters = o.filters,
          .sparse = o.sparse};
}

// The DatasetOptions for `import --create`, from the .npy header or from
// --dtype and --shape for raw input.
Result<DatasetOptions> CreateOptionsFor(const ImportOptions& o, const Source& src) {
  if (src.npy) {
    if (!o.dtype.empty() || !o.shape.empty()) {
      return Err(Status::InvalidArgument("--dtype and --shape are for raw input; a .npy header gives them"));
    }
    if (src.npy->shape.empty()) {
      return Err(Status::InvalidArgument(fmt::format(
          "{}: a 0-d .npy has no shape a dataset can take (datasets have rank 1 to {})", src.file.name(), kMaxRank)));
    }
    return MakeDatasetOptions(src.npy->dtype, src.npy->shape, LayoutOf(o));
  }
  if (o.dtype.empty() || o.shape.empty()) {
    return Err(Status::InvalidArgument(
        fmt::format("{} is raw data, which has no dtype or shape: give --dtype and --shape with "
                    "--create, or import a .npy file",
                    src.file.name())));
  }
  auto dtype = ParseDType(o.dtype);
  if (!dtype) return Err(AddContext(dtype.error(), fmt::format("--dtype '{}'", o.dtype)));
  SLABFS_ASSIGN_OR_RETURN(Dims shape, ParseDimsOption("--shape", o.shape));
  SLABFS_ASSIGN_OR_RETURN(DatasetOptions options, MakeDatasetOptions(*dtype, shape, LayoutOf(o)));
  uint64_t elements = 1;
  uint64_t bytes = 0;
  for (uint64_t d : shape) {
    if (__builtin_mul_overflow(elements, d, &elements)) {
      return Err(Status::InvalidArgument("--shape: the element count overflows 64 bits"));
    }
  }
  if (__builtin_mul_overflow(elements, uint64_t{ItemSize(*dtype)}, &bytes)) {
    return Err(Status::InvalidArgument("--shape: the size in bytes overflows 64 bits"));
  }
  if (src.data_bytes && *src.data_bytes != bytes) {
    return Err(
        Status::InvalidArgument(fmt::format("size mismatch: {} is {} bytes but {} needs {} bytes", src.file.name(),
                                            *src.data_bytes, TypeAndShape(*dtype, shape), bytes)));
  }
  return options;
}

// Copies every element from the input into the dataset.
Status CopyIn(Source& src, Dataset& ds, std::string_view path) {
  const uint64_t total = ds.num_elements();
  const size_t item = ds.item_size();
  const uint64_t block = std::max<uint64_t>(1, kTransferBlockBytes / item);
  std::vector<char> buf(static_cast<size_t>(std::min(block, total)) * item);
  for (uint64_t first = 0; first < total;) {
    uint64_t n = std::min(block, total - first);
    size_t want = static_cast<size_t>(n) * item;
    SLABFS_ASSIGN_OR_RETURN(size_t got, ReadData(src, buf.data(), want));
    if (got < want) {
      return Status::InvalidArgument(fmt::format("{} is truncated: it ends after {} data bytes but {} holds {}",
                                                 src.file.name(), first * item + got, path, total * item));
    }
    SLABFS_RETURN_IF_ERROR(AddContext(ds.WriteElements(first, n, buf.data()), path));
    first += n;
  }
  if (!src.data_bytes) {
    // A pipe: only reading shows whether there is more.
    char extra = 0;
    SLABFS_ASSIGN_OR_RETURN(size_t got, ReadData(src, &extra, 1));
    if (got != 0) {
      return Status::InvalidArgument(
          fmt::format("{} holds more than the {} bytes of {}", src.file.name(), total * item, path));
    }
  }
  return Status::OK();
}

Result<bool> WantsNpy(const ExportOptions& o) {
  if (o.format == "npy") return true;
  if (o.format == "raw") return false;
  if (o.format != "auto") {
    return Err(Status::InvalidArgument(fmt::format("--format '{}': expected auto, raw or npy", o.format)));
  }
  if (o.output == kStdStreamName) return false;
  std::string ext = boost::filesystem::path(o.output).extension().string();
  return boost::algorithm::to_lower_copy(ext) == ".npy";
}

// The tree import this command line asks for, if any: `import FILE SOURCE`
// where SOURCE is not a dataset path, or `import FILE GROUP SOURCE` where
// SOURCE is an HDF5 file or Zarr store (then GROUP is where it goes).
std::optional<convert::TreeImportOptions> TreeImportFor(const ImportOptions& o) {
  convert::TreeImportOptions t = o.tree;
  t.container = o.file;
  if (o.input.empty()) {
    if (o.create) return std::nullopt;
    t.source = o.path;
    return t;
  }
  if (o.input == kStdStreamName || o.create) return std::nullopt;
  if (!convert::DetectSource(o.input)) return std::nullopt;
  t.source = o.input;
  t.into = o.path;
  return t;
}

// The tree export this command line asks for, if any: `export FILE OUTPUT`,
// or `export FILE PATH OUTPUT` with an HDF5/Zarr OUTPUT or --format.
std::optional<convert::TreeExportOptions> TreeExportFor(const ExportOptions& o) {
  convert::TreeExportOptions t;
  t.container = o.file;
  t.quiet = o.quiet;
  t.format = o.format == "raw" || o.format == "npy" ? std::string("none") : o.format;
  if (t.format == "none") return std::nullopt;
  if (o.output.empty()) {
    t.output = o.path;
    t.from = o.tree_path.empty() ? "/" : o.tree_path;
    return t;
  }
  t.output = o.output;
  if (!convert::ExportFormat(t)) return std::nullopt;
  t.from = o.path;
  return t;
}

}  // namespace

Status RunImport(const ImportOptions& o, std::ostream& out) {
  if (auto tree = TreeImportFor(o)) return convert::RunImportTree(*tree, out);
  if (o.input.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: give the INPUT to import into this dataset, or an HDF5 file or Zarr store alone", o.path));
  }
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  if (IsRootPath(o.path)) return Status::InvalidArgument("/: the root is a group, not a dataset");
  if (!o.create && (!o.dtype.empty() || !o.shape.empty() || !o.chunks.empty() || !o.fill.empty() ||
                    !o.max_shape.empty() || !o.index.empty() || o.parents || o.sparse || o.filters.given())) {
    return Status::InvalidArgument(
        "--dtype, --shape, --chunks, --fill, --maxshape, --index, --sparse, --parents and the "
        "filter options only apply with --create");
  }
  if (o.input != kStdStreamName && IsSameFile(o.input, o.file)) {
    return Status::InvalidArgument(fmt::format("{}: the input is the container itself", o.input));
  }
  SLABFS_ASSIGN_OR_RETURN(Source src, OpenSource(o.input));
  SLABFS_RETURN_IF_ERROR(CheckNpyDataSize(src));
  std::optional<DatasetOptions> create;
  if (o.create) {
    SLABFS_ASSIGN_OR_RETURN(create, CreateOptionsFor(o, src));
  }

  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "import"));
  Container& c = session.container();
  Dataset ds;
  if (create) {
    if (o.parents) {
      std::string parent = ParentPath(o.path);
      auto id = c.MakeGroups(parent, true);
      if (!id) return AddContext(id.error(), parent);
    }
    auto made = c.CreateDataset(o.path, *create);
    if (!made) return AddContext(made.error(), o.path);
    ds = std::move(*made);
  } else {
    auto opened = c.OpenDataset(o.path);
    if (!opened) return AddContext(opened.error(), o.path);
    ds = std::move(*opened);
    SLABFS_RETURN_IF_ERROR(CheckFits(src, ds, o.path));
  }
  SLABFS_RETURN_IF_ERROR(CopyIn(src, ds, o.path));
  return AddContext(session.Finish(), o.file);
}

Status RunExport(const ExportOptions& o, std::ostream& report) {
  if (auto tree = TreeExportFor(o)) return convert::RunExportTree(*tree, report);
  if (o.output.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: give the OUTPUT file, or an .h5/.nc/.zarr output alone (or --format)", o.path));
  }
  if (!o.tree_path.empty()) {
    return Status::InvalidArgument("--path applies to a tree export (.h5, .nc, .zarr)");
  }
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  SLABFS_ASSIGN_OR_RETURN(bool npy, WantsNpy(o));
  if (o.output != kStdStreamName && IsSameFile(o.output, o.file)) {
    return Status::InvalidArgument(fmt::format("{}: the output is the container itself", o.output));
  }
  // One dataset of any store (a container, an HDF5 or netCDF-4 file, a
  // Zarr store) as raw bytes or .npy, a block at a time.
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStoreForReading(o.file));
  auto opened = store->OpenDataset(o.path);
  if (!opened) return AddContext(opened.error(), o.path);
  const StoreDataset& ds = **opened;
  const DatasetInfo& info = ds.info().dataset;

  SLABFS_ASSIGN_OR_RETURN(OutputFile out, OutputFile::Create(o.output));
  if (npy) {
    std::string header = EncodeNpyHeader(info.dtype, info.shape);
    SLABFS_RETURN_IF_ERROR(out.Write(header.data(), header.size()));
  }
  const uint64_t total = info.num_elements;
  const size_t item = ItemSize(info.dtype);
  const uint64_t block = std::max<uint64_t>(1, kTransferBlockBytes / item);
  std::vector<char> buf(static_cast<size_t>(std::min(block, total)) * item);
  // Blocks with nothing defined (sparse) or stored (dense, and every chunk
  // a foreign store never wrote) are the fill value, written without
  // reading them: the walk of the defined runs jumps from stored chunk to
  // stored chunk, so it finds where the next data lies at the cost of the
  // stored chunks, however long the hole. It is asked again only once a
  // block starts past the data it last found.
  std::vector<char> fill;
  uint64_t hole_until = 0, data_until = 0;  // elements [first, hole_until) are undefined
  for (uint64_t first = 0; first < total;) {
    uint64_t n = std::min(block, total - first);
    if (first >= hole_until && first >= data_until) {
      std::optional<ElementRun> next;
      SLABFS_RETURN_IF_ERROR(AddContext(ds.ForEachDefinedRun(first, total - first,
                                                             [&](const ElementRun& r) {
                                                               next = r;
                                                               return false;
                                                             }),
                                        o.path));
      hole_until = next ? next->first : total;
      data_until = next ? next->first + next->count : total;
    }
    if (first + n <= hole_until) {
      if (fill.empty()) {
        fill.resize(buf.size());
        for (size_t i = 0; i < fill.size(); i += item) std::memcpy(&fill[i], info.fill.data(), item);
      }
      SLABFS_RETURN_IF_ERROR(out.Write(fill.data(), static_cast<size_t>(n) * item));
      first += n;
      continue;
    }
    SLABFS_RETURN_IF_ERROR(AddContext(ds.ReadElements(first, n, buf.data()), o.path));
    SLABFS_RETURN_IF_ERROR(out.Write(buf.data(), static_cast<size_t>(n) * item));
    first += n;
  }
  return out.Finish();
}

void AddTransferCommands(CLI::App& app, CommandTable& table) {
  {
    auto o = std::make_shared<ImportOptions>();
    CLI::App* sub =
        app.add_subcommand("import",
                           "Import a whole HDF5 / netCDF-4 file or Zarr v2/v3 store (groups, datasets, attributes), "
                           "or write one dataset from raw little-endian bytes or a .npy file");
    sub->add_option("FILE", o->file, "container file (created by a tree import when missing)")->required();
    sub->add_option("PATH", o->path,
                    "absolute path of the dataset; or, alone, an HDF5/netCDF-4 file or Zarr "
                    "store whose whole tree is imported")
        ->required();
    sub->add_option("INPUT", o->input,
                    "raw bytes in C order (exactly the dataset's size), or a .npy file "
                    "(recognised by its magic bytes); - reads stdin");
    sub->add_option("--path", o->tree.from, "tree import: the group or dataset of the source to copy (default /)");
    sub->add_option("--into", o->tree.into, "tree import: the container group that receives it (default /)");
    sub->add_flag("--strict", o->tree.strict,
                  "tree import: refuse the import when the source holds something slabfs "
                  "cannot store (default: skip it with a message)");
    sub->add_flag("--recompress", o->tree.recompress,
                  "tree import: decode and encode every chunk; by default HDF5 chunks that are "
                  "deflated (after a shuffle or not) as the container stores them are copied as "
                  "stored, after one decode that checks them");
    sub->add_flag("-q,--quiet", o->tree.quiet, "no progress bar and no summary");
    CLI::Option* create = sub->add_flag("--create", o->create,
                                        "create the dataset: dtype and shape from the .npy header, or from --dtype and "
                                        "--shape for raw input");
    sub->add_flag("-p,--parents", o->parents, "create missing parent groups")->needs(create);
    sub->add_option("--dtype", o->dtype, "raw input: element type")->needs(create);
    sub->add_option("--shape", o->shape, "raw input: dimensions, like 100,200")->needs(create);
    sub->add_option("--chunks", o->chunks, "chunk shape (default: chosen by slabfs)")->needs(create);
    sub->add_option("--fill", o->fill, "fill value (default 0)")->needs(create);
    sub->add_option("--maxshape", o->max_shape, "how far each dimension may grow, like unlimited,512,512")
        ->needs(create);
    sub->add_option("--index", o->index, "chunk index (default: auto)")->needs(create);
    AddFilterOptions(sub, &o->filters, create);
    sub->add_flag("--sparse", o->sparse, "sparse dataset (every imported element is then defined)")->needs(create);
    table.Add(sub, [o](std::ostream& out) { return RunImport(*o, out); });
  }
  {
    auto o = std::make_shared<ExportOptions>();
    CLI::App* sub =
        app.add_subcommand("export",
                           "Export a tree as an HDF5 / netCDF-4 file or a Zarr v2/v3 store, or one dataset as a "
                           ".npy file or raw bytes (by extension or --format)");
    sub->add_option("FILE", o->file,
                    "container file, or an HDF5 / netCDF-4 file or Zarr store (a tree export then converts it)")
        ->required();
    sub->add_option("PATH", o->path,
                    "absolute path of the dataset; or, alone, the HDF5 file or Zarr store to "
                    "write the whole tree to")
        ->required();
    sub->add_option("OUTPUT", o->output,
                    "output file (replaced if it exists); NAME.npy gets a .npy header; "
                    "- writes raw bytes to stdout; NAME.h5/.nc/.zarr writes PATH's tree");
    sub->add_option("--path", o->tree_path, "tree export: the group or dataset to write (default /)");
    sub->add_option("--format", o->format,
                    "auto (by extension: .npy, .h5/.hdf5/.nc, .zarr; else raw), raw, npy, "
                    "hdf5, zarr2 or zarr3")
        ->check(CLI::IsMember({"auto", "raw", "npy", "hdf5", "zarr2", "zarr3"}))
        ->capture_default_str();
    sub->add_flag("-q,--quiet", o->quiet, "tree export: no progress bar and no summary");
    table.Add(sub, [o](std::ostream& out) { return RunExport(*o, out); });
  }
}

}  // namespace slabfs::tools
