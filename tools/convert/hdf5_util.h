// What the HDF5 import and export share: owning handles for libhdf5
// identifiers, libhdf5's error stack as a Status, the session that keeps
// libhdf5 quiet, and the mapping between slabfs dtypes and HDF5 types.
//
// libhdf5 reports a failure by a negative return value and an entry on its
// error stack, which it prints to stderr unless told not to. While an
// Hdf5Session exists nothing is printed; each failing call is turned into a
// Status with Hdf5Error, which reads and clears the stack. Nothing here is
// thread-safe: one import or export runs libhdf5 at a time.
#ifndef SLABFS_TOOLS_CONVERT_HDF5_UTIL_H_
#define SLABFS_TOOLS_CONVERT_HDF5_UTIL_H_

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"
#include "stores/object_path.h"

namespace slabfs::tools::convert {

// Owns one libhdf5 identifier (file, group, dataset, datatype, dataspace,
// attribute or property list) and closes it when destroyed. Move-only.
class H5Handle {
 public:
  H5Handle() = default;
  explicit H5Handle(hid_t id) : id_(id) {}
  ~H5Handle() { Reset(); }
  H5Handle(H5Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      Reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now, ignoring errors (a failure path).
  void Reset();
  // Closes now and reports a failure, for a file being written: its
  // metadata is flushed at the close.
  Status Close(std::string_view what);

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// libhdf5's error stack as a Status with `code`: "what: <what the called
// function says> (<the innermost cause>)". Clears the stack.
Status Hdf5Error(Code code, std::string_view what);

// An identifier returned by libhdf5, or the error stack as a Status.
Result<H5Handle> Checked(hid_t id, Code code, std::string_view what);
// A herr_t (or htri_t, for the failure case) returned by libhdf5.
Status Checked(herr_t r, Code code, std::string_view what);

// While one exists, libhdf5 prints no error stacks and loads no filter
// plugins (a file names the filters it needs; only the built-in ones that
// slabfs maps are ever used, so a hostile file cannot make libhdf5 load
// code). The previous settings come back when it is destroyed.
class Hdf5Session {
 public:
  Hdf5Session();
  ~Hdf5Session();
  Hdf5Session(const Hdf5Session&) = delete;
  Hdf5Session& operator=(const Hdf5Session&) = delete;

 private:
  H5E_auto2_t old_func_ = nullptr;
  void* old_data_ = nullptr;
  unsigned old_plugins_ = 0;
};

// The little-endian standard HDF5 type of a slabfs dtype (H5T_STD_I32LE,
// H5T_IEEE_F64LE, ...): the file type of an export and the memory type of
// every import read. Owned by libhdf5; never closed.
hid_t Hdf5TypeOf(DType t);

// Why a source datatype has no slabfs dtype ("compound", "16-bit float",
// "variable-length string", ...), or the dtype.
struct TypeMatch {
  std::optional<DType> dtype;
  std::string why_not;  // set when dtype is empty
};
TypeMatch MatchHdf5Type(hid_t type);

// Dims as libhdf5's hsize_t, and back.
std::vector<hsize_t> ToHsize(const Dims& dims);
Dims FromHsize(const hsize_t* dims, size_t rank);

// "/a/b" + "c" -> "/a/b/c"; "/" + "c" -> "/c".
// libhdf5 1.10 answers "the i-th allocated chunk" by walking the chunk
// index, so listing n chunks costs n^2/2 steps: the import and the HDF5
// store list up to this many chunks and ask by coordinate beyond.
inline constexpr hsize_t kMaxListedHdf5Chunks = 4096;

// The name of an HDF5 filter we do not decode (szip, lzf, blosc, ...), for
// messages: known ids by name, else the name the file stores, else
// "unknown".
std::string Hdf5FilterName(H5Z_filter_t id, const char* stored);

// Object paths (stores/object_path.h).
using stores::BaseName;
using stores::JoinPath;

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_HDF5_UTIL_H_
