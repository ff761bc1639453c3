// The commands of tree import and export (see convert.h): find the formats,
// open the source as a store, own the destination's temporary name, the
// progress bar and the summary; the copy itself is CopyStore's
// (store_copy.h).
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <fstream>
#include <new>
#include <utility>

#include <fmt/format.h>
#include <boost/algorithm/string/case_conv.hpp>
#include <boost/filesystem.hpp>

#include "engine/io/os_error.h"
#include "tools/byte_stream.h"
#include "tools/commands.h"
#include "tools/convert/convert.h"
#include "tools/convert/hdf5_export_module.h"
#include "tools/convert/store_copy.h"
#include "tools/session.h"

namespace slabfs::tools::convert {
namespace {

namespace fs = boost::filesystem;

bool IsRegularFile(const std::string& p) {
  boost::system::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool IsDirectory(const std::string& p) {
  boost::system::error_code ec;
  return fs::is_directory(p, ec);
}

bool Exists(const std::string& p) {
  boost::system::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

// HDF5's signature sits at 0 or at 512, 1024, 2048, ... (a user block).
bool HasHdf5Signature(const std::string& path) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char got[8];
  for (uint64_t at = 0; at <= (uint64_t{1} << 30); at = at == 0 ? 512 : at * 2) {
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(got, sizeof got)) return false;
    if (std::memcmp(got, kSignature, sizeof got) == 0) return true;
  }
  return false;
}

// What a file that is no HDF5 file is, from its first bytes, for the
// message: "" when unknown.
std::string OtherFormatOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[4] = {};
  if (!in || !in.read(head, sizeof head)) return "";
  if (std::memcmp(head, "\x0e\x03\x13\x01", 4) == 0) {
    return "an HDF4 file; slab reads HDF5 and netCDF-4 (convert it with h4toh5 first)";
  }
  if (std::memcmp(head, "CDF", 3) == 0 && (head[3] == 1 || head[3] == 2 || head[3] == 5)) {
    return "a netCDF-3 classic file; slab reads netCDF-4 (convert it with nccopy -k nc4 first)";
  }
  return "";
}

// Zarr v3 drafts before the 3.0 specification (zarr-python 2's
// experimental v3) also have a root zarr.json, whose "zarr_format" is a
// URL, not 3.
bool IsPreReleaseZarr3(const fs::path& store) {
  std::ifstream in((store / "zarr.json").string(), std::ios::binary);
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text.find("\"zarr_format\"") != std::string::npos &&
         text.find("purl.org/zarr/spec/protocol/core/3.0") != std::string::npos;
}

Status CheckDestinationFree(const std::string& output) {
  if (output.empty()) return Status::InvalidArgument("the output path is empty");
  if (Exists(output)) {
    return Status::AlreadyExists(fmt::format("{}: already exists (slab export never overwrites)", output));
  }
  fs::path dir = fs::path(output).parent_path();
  if (!dir.empty() && !IsDirectory(dir.string())) {
    return Status::NotFound(fmt::format("{}: the directory {} does not exist", output, dir.string()));
  }
  return Status::OK();
}

void RemoveTree(const std::string& path) {
  boost::system::error_code ec;
  fs::remove_all(path, ec);
}

// Gives the finished file or directory `temp` the name `path`, never
// replacing anything there, and syncs the parent directory.
Status RenameIntoPlace(const std::string& temp, const std::string& path) {
  if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    return engine::StatusFromErrno(errno, path);
  }
  std::string dir = fs::path(path).parent_path().string();
  int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  return Status::OK();
}

std::string FormatName(Format f) {
  switch (f) {
    case Format::kHdf5: return "HDF5";
    case Format::kZarr2: return "Zarr v2";
    case Format::kZarr3: return "Zarr v3";
  }
  return "?";
}

// The format modules use libraries that throw (nlohmann::json, the
// standard library's allocations). An exception becomes a Status here, so
// that the drivers below still remove their temporary destination.
template <typename F>
Status Guarded(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status::IOError("out of memory");
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("unexpected error: {}", e.what()));
  }
}

Status ImportInto(const TreeImportOptions& o, const Store& src, Container& c, Progress& progress, std::ostream& out) {
  if (!IsRootPath(o.into)) {
    auto made = c.MakeGroups(o.into, true);
    if (!made) return AddContext(made.error(), o.into);
  }
  CopyReport report(out, o.strict);
  CopyOptions copy{.from = o.from, .into = o.into, .strict = o.strict, .recompress = o.recompress};
  return Guarded([&] {
    std::unique_ptr<CopySink> sink = ContainerSink(c, o.container, report);
    return CopyStore(src, copy, *sink, progress, report);
  });
}

}  // namespace

Result<Format> DetectSource(const std::string& source) {
  if (IsDirectory(source)) {
    fs::path p(source);
    if (Exists((p / "zarr.json").string())) {
      if (IsPreReleaseZarr3(p)) {
        return Err(Status::NotSupported(
            fmt::format("{}: a Zarr v3 store of a draft before the 3.0 specification (zarr-python 2's "
                        "experimental v3, metadata under meta/); slab reads Zarr v2 and v3 (rewrite it with "
                        "zarr-python 3, or as v2)",
                        source)));
      }
      return Format::kZarr3;
    }
    if (Exists((p / ".zgroup").string()) || Exists((p / ".zarray").string())) return Format::kZarr2;
    return Err(Status::InvalidArgument(
        fmt::format("{}: a directory without .zgroup, .zarray or zarr.json is not a Zarr store", source)));
  }
  if (!Exists(source)) {
    return Err(Status::NotFound(
        fmt::format("{}: no such file (to import into a dataset, give its PATH and then the INPUT)", source)));
  }
  if (!IsRegularFile(source)) {
    return Err(Status::InvalidArgument(fmt::format("{}: not a file or a directory", source)));
  }
  if (HasHdf5Signature(source)) return Format::kHdf5;
  if (std::string other = OtherFormatOf(source); !other.empty()) {
    return Err(Status::NotSupported(fmt::format("{}: {}", source, other)));
  }
  return Err(Status::InvalidArgument(
      fmt::format("{}: not an HDF5 or netCDF-4 file (no HDF5 signature); netCDF-3 classic files are not "
                  "supported",
                  source)));
}

Result<Format> ExportFormat(const TreeExportOptions& o) {
  if (o.format == "hdf5") return Format::kHdf5;
  if (o.format == "zarr2") return Format::kZarr2;
  if (o.format == "zarr3") return Format::kZarr3;
  if (o.format != "auto") {
    return Err(Status::InvalidArgument(fmt::format("--format '{}': expected auto, hdf5, zarr2 or zarr3", o.format)));
  }
  std::string out = o.output;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  std::string ext = boost::algorithm::to_lower_copy(fs::path(out).extension().string());
  if (ext == ".h5" || ext == ".hdf5" || ext == ".he5" || ext == ".nc" || ext == ".nc4") {
    return Format::kHdf5;
  }
  if (ext == ".zarr") return Format::kZarr2;
  return Err(Status::InvalidArgument(
      fmt::format("{}: cannot tell the format from the name; give --format hdf5, zarr2 or zarr3", o.output)));
}

Status RunImportTree(const TreeImportOptions& o, std::ostream& out) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.from));
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.into));
  if (IsSameFile(o.source, o.container)) {
    return Status::InvalidArgument(fmt::format("{}: the source is the container itself", o.source));
  }
  SLABFS_ASSIGN_OR_RETURN(Format f, DetectSource(o.source));
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> src, OpenStoreForReading(o.source));
  Progress progress("importing", o.quiet);
  Status s;
  if (!Exists(o.container)) {
    fs::path dir = fs::path(o.container).parent_path();
    if (!dir.empty() && !IsDirectory(dir.string())) {
      return Status::NotFound(fmt::format("{}: the directory {} does not exist", o.container, dir.string()));
    }
    // A new container: built under a temporary name, linked at the end.
    const std::string temp = TempPathNextTo(o.container);
    s = [&]() -> Status {
      SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(temp, "import", /*create=*/true, /*pack=*/true));
      SLABFS_RETURN_IF_ERROR(ImportInto(o, *src, session.container(), progress, out));
      SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
      return session.Finish();
    }();
    if (s.ok()) s = LinkIntoPlace(temp, o.container);
    if (!s.ok()) RemoveQuietly(temp);
  } else {
    // An existing container: one session, committed only when all is copied.
    s = [&]() -> Status {
      SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.container, "import"));
      SLABFS_RETURN_IF_ERROR(ImportInto(o, *src, session.container(), progress, out));
      SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
      return session.Finish();
    }();
  }
  progress.Done();
  if (!s.ok()) return AddContext(std::move(s), o.source);
  if (!o.quiet) {
    out << fmt::format("imported {} in {} from {} ({})\n", HumanBytes(static_cast<double>(progress.bytes())),
                       Counted(progress.chunks(), "chunk"), o.source, FormatName(f));
  }
  return Status::OK();
}

Status RunExportTree(const TreeExportOptions& o, std::ostream& out) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.from));
  SLABFS_ASSIGN_OR_RETURN(Format f, ExportFormat(o));
  SLABFS_RETURN_IF_ERROR(CheckDestinationFree(o.output));
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> src, OpenStoreForReading(o.container));
  {
    auto id = src->Resolve(o.from);
    if (!id) return AddContext(id.error(), o.from);
  }
  // HDF5 is written by a module that slab loads now (stores/modules/format_module.h).
  const Hdf5ExportModule* hdf5 = nullptr;
  if (f == Format::kHdf5) {
    auto entry = Hdf5ExportEntry();
    if (!entry) return AddContext(entry.error(), fmt::format("{}: writing HDF5", o.output));
    hdf5 = *entry;
  }
  Progress progress("exporting", o.quiet);
  const std::string temp = TempPathNextTo(o.output);
  CopyReport report(out, /*strict=*/false);
  CopyOptions copy{.from = o.from, .into = "/", .group_is_root = true};
  Status s = Guarded([&] {
    std::unique_ptr<CopySink> sink =
        hdf5 != nullptr ? hdf5->sink(temp, report) : ZarrSink(temp, f == Format::kZarr3 ? 3 : 2, report);
    Status copied = CopyStore(*src, copy, *sink, progress, report);
    sink.reset();  // closes what it holds before the temporary name is removed or renamed
    return copied;
  });
  if (s.ok()) s = InterruptGuard::Check();
  if (s.ok()) s = RenameIntoPlace(temp, o.output);
  progress.Done();
  if (!s.ok()) {
    RemoveTree(temp);
    return AddContext(std::move(s), o.output);
  }
  if (!o.quiet) {
    out << fmt::format("exported {} in {} to {} ({})\n", HumanBytes(static_cast<double>(progress.bytes())),
                       Counted(progress.chunks(), "chunk"), o.output, FormatName(f));
  }
  return Status::OK();
}

}  // namespace slabfs::tools::convert
