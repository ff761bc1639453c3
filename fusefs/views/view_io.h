// Reading and writing a view's bytes (view_layout.h) through the dataset's
// hyperslab API. Only the elements a request covers are read: a view of a
// 4 GiB dataset never sits in memory.
#ifndef SLABFS_FUSEFS_VIEWS_VIEW_IO_H_
#define SLABFS_FUSEFS_VIEWS_VIEW_IO_H_

#include <cstddef>
#include <cstdint>

#include "fusefs/file_data.h"
#include "fusefs/views/view_layout.h"
#include "slabfs/container.h"

namespace slabfs::fusefs::views {

// Bytes [off, off + len) of the view, clipped at its end; the count read.
Result<size_t> ReadView(const FileData& ds, const ViewLayout& v, uint64_t off, size_t len, char* buf);

// Writes bytes [off, off + len) of a raw view: the elements they cover (a
// partial element at either end is read, patched and written back).
// OutOfRange past the end of the view (nothing is written); NotSupported
// for the typed views.
Status WriteView(Dataset& ds, const ViewLayout& v, uint64_t off, size_t len, const char* buf);

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_VIEW_IO_H_
