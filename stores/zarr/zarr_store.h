// A Zarr v2 or v3 directory store as a store (include/slabfs/store.h),
// read-only, or read-write when opened with `writable` (its writer is
// zarr_writer.h: chunks re-encoded and replaced by temporary file and
// rename, attributes, groups, resizing along the first dimension).
//
// Opening walks the directory once, as `slab import` does
// (tools/convert/zarr_listing.h): groups are directories holding .zgroup
// (v2) or a zarr.json whose node_type is "group" (v3), arrays those holding
// .zarray or a zarr.json of node_type "array"; attributes come from .zattrs
// or zarr.json's attributes, converted as the import converts them; each
// array's chunk keys present are listed then. A store whose root is an
// array shows a root group holding that one array, named after the store's
// directory without ".zarr". After that a read opens the chunk files it
// needs, decodes them with the import's codecs (zlib, gzip, blosc,
// shuffle, crc32c; big-endian elements swapped, F-order and transposed
// chunks put in C order) on the engine's thread pool, and keeps decoded
// chunks in the store's chunk cache (one budget for the store; chunks read
// whole into the caller's buffer bypass it). Chunks the store lacks read
// as the array's fill value; Zarr stores edge chunks whole.
//
// What it does not read is absent from the tree and listed by Skipped(),
// with a log line: arrays the import would skip (dtypes such as bool,
// complex or strings; codecs such as sharding or zstd; chunks over 1 GiB),
// arrays whose metadata is damaged, names slabfs does not accept,
// directories that are neither group nor array, attributes slabfs cannot
// hold.
//
// Opened read-only, the store is never written. Chunk keys are learned
// once: chunks another program writes later are not seen until the store
// is opened again (a chunk removed since reads as the fill value); a
// writable store keeps them up to date with its own writes only (two
// writers of one store, this and another program, are not coordinated).
//
// Bytes of the store are untrusted: a chunk file that is not a regular
// file, is far larger than its chunk, or does not decode to exactly the
// chunk is Corruption naming the store, array and chunk key; nothing of a
// damaged chunk is returned as data.
#ifndef SLABFS_STORES_ZARR_ZARR_STORE_H_
#define SLABFS_STORES_ZARR_ZARR_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "slabfs/store.h"

namespace slabfs::stores {

struct ZarrStoreOptions {
  // The chunk cache's budget (decoded chunks), a hard bound.
  uint64_t cache_bytes = 64ull << 20;
  // Hand out a writer (Store::writer()). Every array's first dimension can
  // then grow (max shape unlimited there unless an export fixed one).
  bool writable = false;
};

// Errors: NotFound (no such path), NotSupported (a directory that is not a
// Zarr store), Corruption (the root's metadata breaks the spec), IOError.
Result<std::unique_ptr<Store>> OpenZarrStore(const std::string& path, const ZarrStoreOptions& options = {});

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_ZARR_ZARR_STORE_H_
