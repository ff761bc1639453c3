// Zero-copy reads: a byte range of a dataset as pieces of pinned chunk
// images (or of a block of fill values), for gathering replies.
#include <algorithm>
#include <cstring>

#include "engine/container_impl.h"

namespace slabfs {

struct ReadView::Rep {
  // Held for the view's life, so no writer changes what the pieces show.
  std::shared_lock<std::shared_mutex> commit_lock;
  std::shared_lock<std::shared_mutex> rw_lock;
  engine::ChunkCache* cache = nullptr;
  std::vector<std::pair<engine::ChunkCache::Entry*, uint64_t>> pinned;  // entry, bytes used
  std::vector<struct iovec> pieces;
  std::vector<std::unique_ptr<char[]>> owned;
  size_t size = 0;

  ~Rep() {
    // The body runs before the members go: pins are released while the
    // locks are still held.
    if (!cache) return;
    for (auto [e, used] : pinned) cache->Release(e, used);
    cache->EvictToBudget();
  }
};

ReadView::ReadView() = default;
ReadView::~ReadView() = default;
ReadView::ReadView(ReadView&&) noexcept = default;
ReadView& ReadView::operator=(ReadView&&) noexcept = default;
const struct iovec* ReadView::pieces() const { return rep_ ? rep_->pieces.data() : nullptr; }
int ReadView::num_pieces() const { return rep_ ? static_cast<int>(rep_->pieces.size()) : 0; }
size_t ReadView::size() const { return rep_ ? rep_->size : 0; }

namespace engine {
namespace {

// Views are for request-sized ranges: everything they touch stays pinned.
constexpr uint64_t kMaxViewBytes = 64ull << 20;
constexpr uint64_t kFillBlockBytes = 64 * 1024;  // a multiple of every item size

}  // namespace

const char* DatasetState::FillBlock() {
  std::call_once(fill_once_, [&] {
    fill_block_.reset(new char[kFillBlockBytes]);
    FillBytes(fill_block_.get(), kFillBlockBytes / item_size_);
  });
  return fill_block_.get();
}

Result<ReadView> DatasetState::ViewBytes(uint64_t offset, size_t length, int max_pieces) {
  if (max_pieces < 1) return Err(Status::InvalidArgument("a view needs at least one piece"));
  if (length > kMaxViewBytes)
    return Err(Status::InvalidArgument("views are limited to " + std::to_string(kMaxViewBytes >> 20) + " MiB"));
  ReadView view;
  view.rep_ = std::make_unique<ReadView::Rep>();
  ReadView::Rep& rep = *view.rep_;
  const uint64_t isz = item_size_;
  const uint64_t size = num_elements_ * isz;
  if (offset >= size || length == 0) return view;
  length = static_cast<size_t>(std::min<uint64_t>(length, size - offset));

  rep.commit_lock = std::shared_lock(c_->commit_mu());
  rep.rw_lock = std::shared_lock(rw_);
  ChunkCache& cache = c_->cache();
  rep.cache = &cache;

  struct Piece {
    uint64_t pos;  // byte position from the first element's start
    const char* ptr;
    uint64_t len;
  };
  std::vector<Piece> ps;
  const uint64_t e0 = offset / isz;
  const uint64_t e1 = (offset + length + isz - 1) / isz;
  for (const LinearBox& b : DecomposeLinear(meta_.shape, e0, e1 - e0)) {
    TransferPlan plan;
    SLABFS_RETURN_IF_ERROR_R(plan.Build(meta_.shape, meta_.chunks, b.box, nullptr));
    for (ChunkCursor cur(plan); !cur.done(); cur.Next()) {
      const CacheKey key{id_, cur.linear()};
      ChunkCache::Entry* e = cache.Lookup(key);
      if (!e) {
        SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.linear()));
        if (!rec.allocated()) {
          const char* fill = FillBlock();
          cur.ForEachRun([&](uint64_t, uint64_t mo, uint64_t n) {
            for (uint64_t done = 0; done < n * isz;) {
              uint64_t take = std::min(kFillBlockBytes, n * isz - done);
              ps.push_back({(b.offset + mo) * isz + done, fill, take});
              done += take;
            }
          });
          continue;
        }
        const uint64_t bytes = ChunkBytes(cur);
        SLABFS_RETURN_IF_ERROR_R(CheckExtent(rec.addr, bytes, cur.linear()));
        std::unique_ptr<char[]> data = cache.TakeBuffer(bytes);
        Status s = c_->file()->ReadAt(rec.addr, data.get(), bytes);
        if (!s.ok()) return Err(s.WithContext(what() + " chunk " + std::to_string(cur.linear())));
        cache.CountBytesRead(bytes);
        e = cache.Insert(key, std::move(data), bytes, false);
      }
      rep.pinned.emplace_back(e, cur.selected() * isz);
      if (e->partial.load(std::memory_order_acquire)) SLABFS_RETURN_IF_ERROR_R(CompleteEntry(e));
      const char* base = e->data.get();
      cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t n) {
        ps.push_back({(b.offset + mo) * isz, base + co * isz, n * isz});
      });
    }
  }
  // Chunks were visited chunk by chunk; the reply wants byte order.
  std::sort(ps.begin(), ps.end(), [](const Piece& a, const Piece& x) { return a.pos < x.pos; });
  const uint64_t head = offset - e0 * isz;
  const uint64_t end = head + length;
  std::vector<struct iovec>& iov = rep.pieces;
  for (const Piece& p : ps) {
    uint64_t lo = std::max(p.pos, head), hi = std::min(p.pos + p.len, end);
    if (lo >= hi) continue;
    char* ptr = const_cast<char*>(p.ptr) + (lo - p.pos);
    if (!iov.empty() && static_cast<char*>(iov.back().iov_base) + iov.back().iov_len == ptr)
      iov.back().iov_len += hi - lo;
    else
      iov.push_back({ptr, hi - lo});
  }
  if (iov.size() > static_cast<size_t>(max_pieces)) {
    // Too many pieces for one gather: copy the tail into one.
    size_t first = static_cast<size_t>(max_pieces) - 1;
    uint64_t tail = 0;
    for (size_t i = first; i < iov.size(); ++i) tail += iov[i].iov_len;
    std::unique_ptr<char[]> buf(new char[tail]);
    char* q = buf.get();
    for (size_t i = first; i < iov.size(); ++i) {
      std::memcpy(q, iov[i].iov_base, iov[i].iov_len);
      q += iov[i].iov_len;
    }
    iov.resize(first);
    iov.push_back({buf.get(), tail});
    rep.owned.push_back(std::move(buf));
  }
  rep.size = length;
  return view;
}

}  // namespace engine

Result<ReadView> Dataset::ViewBytes(uint64_t offset, size_t length, int max_pieces) const {
  if (!state_) return Err(Status::InvalidArgument("dataset handle is empty"));
  return state_->ViewBytes(offset, length, max_pieces);
}

}  // namespace slabfs
