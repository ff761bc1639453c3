// The whole read path on a hostile container image: open (superblocks,
// object blocks, group tables, the free list, every dataset header and index
// root), then walk the tree: attributes, dataset info, stored chunks,
// defined counts, and reads of every dataset (bounded), which reach the
// index nodes and leaves and the chunk decoders.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/api_access.h"
#include "engine/container_impl.h"
#include "fuzz/mem_file.h"
#include "slabfs/container.h"

namespace {

using slabfs::Container;

constexpr uint64_t kReadBudget = 1 << 20;  // bytes read per input, in all

void Walk(const Container& c, slabfs::ObjectId group, int depth, uint64_t* budget) {
  if (depth > 16) return;
  auto entries = c.List(group);
  if (!entries) return;
  for (const slabfs::Entry& e : *entries) {
    if (auto names = c.ListAttributes(e.id)) {
      for (const std::string& n : *names) (void)c.GetAttribute(e.id, n);
    }
    (void)c.Stat(e.id);
    (void)c.PathOf(e.id);
    if (e.kind == slabfs::ObjectKind::kGroup) {
      Walk(c, e.id, depth + 1, budget);
      continue;
    }
    auto ds = c.OpenDataset(e.id);
    if (!ds) continue;
    (void)ds->info();
    (void)ds->StoredChunks();
    if (ds->info().sparse) (void)ds->CountDefined();
    const uint64_t size = ds->size_bytes();
    // Reads are bounded in bytes and in chunks: a 1 MiB read of one-byte
    // chunks visits a million index records and took most of the fuzzer's
    // time (245 executions/s) without reaching new code.
    uint64_t chunk_bytes = ds->item_size();
    for (uint64_t d : ds->info().chunks)
      chunk_bytes = d != 0 && chunk_bytes <= (1u << 30) / d ? chunk_bytes * d : (1u << 30);
    const uint64_t want = std::min<uint64_t>({size, *budget, 256 << 10, std::max<uint64_t>(4096, 64 * chunk_bytes)});
    if (want == 0) continue;
    std::vector<char> buf(want);
    (void)ds->ReadBytes(0, want, buf.data());
    if (size > want) (void)ds->ReadBytes(size - want, want, buf.data());
    *budget -= want;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  slabfs::OpenOptions o;
  o.read_only = true;
  o.cache_bytes = 1 << 20;
  auto impl = slabfs::engine::ContainerImpl::Open(
      std::make_unique<slabfs::fuzz::MemFile>(std::string(reinterpret_cast<const char*>(data), size)), o);
  if (!impl) return 0;
  std::unique_ptr<Container> c = slabfs::engine::ApiAccess::Wrap(std::move(*impl));
  uint64_t budget = kReadBudget;
  Walk(*c, slabfs::kRootId, 0, &budget);
  (void)c->space();
  return 0;
}
