// The allocator: best fit, alignment, tail growth, merging, the fresh /
// pending / held / free states of copy-on-write, TrimTail, and a randomized
// run against a byte-level ownership map.
#include "engine/space/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/format/layout.h"

namespace slabfs::engine {
namespace {
namespace allocator_test {  // its own names in a unity batch

constexpr uint64_t D = kDataStart;
// The free list's extents; these tests give generation 0 (free for every
// reader) unless they say otherwise.
using Extent = FreedExtent;

class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override { alloc_.Reset(kDataStart, {}); }
  Allocator alloc_;
};

TEST_F(AllocatorTest, GrowsTheFileAtTheTailWhenNothingIsFree) {
  EXPECT_EQ(alloc_.file_end(), D);
  EXPECT_EQ(alloc_.Allocate(100, 1), D);
  EXPECT_EQ(alloc_.file_end(), D + 100);
  EXPECT_EQ(alloc_.Allocate(50, 1), D + 100);
  EXPECT_EQ(alloc_.file_end(), D + 150);
  EXPECT_EQ(alloc_.free_bytes(), 0u);
  EXPECT_EQ(alloc_.num_free_extents(), 0u);
}

TEST_F(AllocatorTest, AlignsTailAllocationsAndKeepsTheGapFree) {
  EXPECT_EQ(alloc_.Allocate(100, 1), D);
  uint64_t a = alloc_.Allocate(10, 64);
  EXPECT_EQ(a % 64, 0u);
  EXPECT_EQ(a, (D + 100 + 63) / 64 * 64);
  EXPECT_EQ(alloc_.file_end(), a + 10);
  // The alignment gap is free space, and is reused.
  uint64_t gap = a - (D + 100);
  EXPECT_EQ(alloc_.free_bytes(), gap);
  EXPECT_EQ(alloc_.Unreferenced(), (std::vector<Extent>{{D + 100, gap}}));
  EXPECT_EQ(alloc_.Allocate(gap, 1), D + 100);
  EXPECT_EQ(alloc_.free_bytes(), 0u);
  EXPECT_EQ(alloc_.file_end(), a + 10);
}

TEST_F(AllocatorTest, AlignsAllocationsInsideFreeExtents) {
  alloc_.Reset(D + 100000, {{D + 1, 20000}});
  for (uint64_t align : {1, 2, 8, 64, 512, 4096}) {
    uint64_t a = alloc_.Allocate(100, align);
    SCOPED_TRACE(align);
    EXPECT_EQ(a % align, 0u);
    EXPECT_GE(a, D + 1);
    EXPECT_LE(a + 100, D + 1 + 20000);
  }
  EXPECT_EQ(alloc_.file_end(), D + 100000);
  // The head and tail pieces around aligned allocations stay free.
  EXPECT_EQ(alloc_.free_bytes(), 20000u - 6 * 100);
}

TEST_F(AllocatorTest, ReusesTheBestFittingFreeExtent) {
  alloc_.Reset(D + 100000, {{D, 1000}, {D + 2000, 100}, {D + 3000, 300}, {D + 5000, 260}});
  EXPECT_EQ(alloc_.Allocate(250, 1), D + 5000);  // 260 is the tightest fit
  EXPECT_EQ(alloc_.Allocate(100, 1), D + 2000);  // exact fit
  EXPECT_EQ(alloc_.Allocate(280, 1), D + 3000);
  EXPECT_EQ(alloc_.Allocate(900, 1), D);
  EXPECT_EQ(alloc_.file_end(), D + 100000);
  // What is left: 10 bytes at D+5250, 20 at D+3280, 100 at D+900.
  EXPECT_EQ(alloc_.Unreferenced(), (std::vector<Extent>{{D + 900, 100}, {D + 3280, 20}, {D + 5250, 10}}));
  EXPECT_EQ(alloc_.Allocate(101, 1), D + 100000);  // nothing fits: tail
}

TEST_F(AllocatorTest, BestFitAccountsForAlignment) {
  // 100 bytes at 64-alignment do not fit in the small unaligned extent.
  alloc_.Reset(D + 100000, {{D + 1, 120}, {D + 1024, 200}});
  EXPECT_EQ(alloc_.Allocate(100, 64), D + 1024);
  // Unaligned, the small extent does fit (the 100 bytes left of the other are
  // too few for 110).
  EXPECT_EQ(alloc_.Allocate(110, 1), D + 1);
}

TEST_F(AllocatorTest, FindsAFittingExtentAmongManyMisalignedOnes) {
  // Many candidates of the right size that cannot hold the aligned request,
  // and one larger one that can: never grow the file when space fits.
  std::vector<Extent> free;
  for (int i = 0; i < 50; ++i) free.push_back({D + 1 + 4096 * static_cast<uint64_t>(i), 100});
  free.push_back({D + 4096 * 60, 5000});
  alloc_.Reset(D + 4096 * 100, free);
  uint64_t a = alloc_.Allocate(100, 4096);
  EXPECT_EQ(a % 4096, 0u);
  EXPECT_EQ(a, D + 4096 * 60);
  EXPECT_EQ(alloc_.file_end(), D + 4096 * 100);
}

TEST_F(AllocatorTest, PrefersFreeSpaceOverGrowingTheFile) {
  alloc_.Reset(D + 10000, {{D + 5000, 5000}});
  EXPECT_EQ(alloc_.Allocate(4000, 8), D + 5000);
  EXPECT_EQ(alloc_.file_end(), D + 10000);
}

TEST_F(AllocatorTest, MergesAdjacentFreeExtentsOnReset) {
  alloc_.Reset(D + 10000, {{D, 100}, {D + 100, 100}, {D + 200, 50}, {D + 1000, 10}});
  EXPECT_EQ(alloc_.num_free_extents(), 2u);
  EXPECT_EQ(alloc_.Unreferenced(), (std::vector<Extent>{{D, 250}, {D + 1000, 10}}));
  EXPECT_EQ(alloc_.free_bytes(), 260u);
  // The merged extent serves a request no single input extent could.
  EXPECT_EQ(alloc_.Allocate(250, 1), D);
}

TEST_F(AllocatorTest, MergesFreedNeighboursInEitherOrder) {
  uint64_t a = alloc_.Allocate(100, 1), b = alloc_.Allocate(100, 1), c = alloc_.Allocate(100, 1);
  uint64_t guard = alloc_.Allocate(100, 1);  // keeps the run away from file_end
  alloc_.Free(a, 100);
  alloc_.Free(c, 100);
  EXPECT_EQ(alloc_.num_free_extents(), 2u);
  alloc_.Free(b, 100);  // joins both neighbours
  EXPECT_EQ(alloc_.num_free_extents(), 1u);
  EXPECT_EQ(alloc_.Unreferenced(), (std::vector<Extent>{{a, 300}}));
  EXPECT_EQ(alloc_.Allocate(300, 1), a);
  EXPECT_EQ(alloc_.file_end(), guard + 100);
}

TEST_F(AllocatorTest, FreedFreshExtentIsReusableAtOnce) {
  uint64_t a = alloc_.Allocate(4096, 64);
  EXPECT_TRUE(alloc_.IsFresh(a));
  alloc_.Free(a, 4096);
  EXPECT_FALSE(alloc_.IsFresh(a));
  EXPECT_EQ(alloc_.free_bytes(), 4096u);
  EXPECT_EQ(alloc_.Allocate(4096, 64), a);
  EXPECT_EQ(alloc_.file_end(), a + 4096);
}

TEST_F(AllocatorTest, FreedCommittedExtentStaysPendingUntilMarkDurable) {
  // [D, D+1000) belongs to the committed state.
  alloc_.Reset(D + 1000, {});
  EXPECT_FALSE(alloc_.IsFresh(D));
  alloc_.Free(D, 500);
  EXPECT_EQ(alloc_.free_bytes(), 500u);      // counted
  EXPECT_EQ(alloc_.num_free_extents(), 0u);  // but not usable
  for (int i = 0; i < 5; ++i) {
    uint64_t a = alloc_.Allocate(100, 1);
    EXPECT_GE(a, D + 1000) << "pending space handed out before MarkDurable";
  }
  EXPECT_EQ(alloc_.file_end(), D + 1500);
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.num_free_extents(), 1u);
  EXPECT_EQ(alloc_.Allocate(500, 1), D);
}

TEST_F(AllocatorTest, AllocationsStopBeingFreshAfterMarkDurable) {
  uint64_t a = alloc_.Allocate(100, 1);
  uint64_t guard = alloc_.Allocate(100, 1);
  EXPECT_TRUE(alloc_.IsFresh(a));
  EXPECT_TRUE(alloc_.IsFresh(guard));
  alloc_.MarkDurable();
  EXPECT_FALSE(alloc_.IsFresh(a));
  // Now a is in the committed state: freeing it makes it pending.
  alloc_.Free(a, 100);
  EXPECT_EQ(alloc_.num_free_extents(), 0u);
  EXPECT_EQ(alloc_.Allocate(100, 1), guard + 100);
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.Allocate(100, 1), a);
}

TEST_F(AllocatorTest, ResetForgetsFreshAndPendingState) {
  uint64_t a = alloc_.Allocate(100, 1);
  alloc_.Free(D + 5000, 10);  // pending
  alloc_.Reset(D + 200, {{D + 100, 100}});
  EXPECT_FALSE(alloc_.IsFresh(a));
  EXPECT_EQ(alloc_.free_bytes(), 100u);
  EXPECT_EQ(alloc_.Unreferenced(), (std::vector<Extent>{{D + 100, 100}}));
  EXPECT_EQ(alloc_.file_end(), D + 200);
}

TEST_F(AllocatorTest, UnreferencedMergesFreeAndPending) {
  alloc_.Reset(D + 10000, {{D + 1000, 100}, {D + 5000, 100}});
  alloc_.Free(D + 1100, 50);  // pending, adjacent after a free extent
  alloc_.Free(D + 900, 100);  // pending, adjacent before it
  alloc_.Free(D + 3000, 10);  // pending, alone
  alloc_.Free(D + 3010, 10);  // pending, adjacent to pending
  EXPECT_EQ(alloc_.free_bytes(), 200u + 170);
  EXPECT_EQ(alloc_.num_free_extents(), 2u);
  EXPECT_EQ(alloc_.Unreferenced(), (std::vector<Extent>{{D + 900, 250}, {D + 3000, 20}, {D + 5000, 100}}));
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.num_free_extents(), 3u);
  EXPECT_EQ(alloc_.Unreferenced(), (std::vector<Extent>{{D + 900, 250}, {D + 3000, 20}, {D + 5000, 100}}));
}

TEST_F(AllocatorTest, UnreferencedIsEmptyWhenEverythingIsInUse) {
  alloc_.Allocate(100, 1);
  EXPECT_TRUE(alloc_.Unreferenced().empty());
}

TEST_F(AllocatorTest, TrimTailDropsFreeTailSpace) {
  uint64_t a = alloc_.Allocate(100, 1);
  uint64_t b = alloc_.Allocate(200, 1);
  uint64_t c = alloc_.Allocate(300, 1);
  alloc_.Free(c, 300);
  alloc_.Free(b, 200);  // merges with c into the tail
  EXPECT_EQ(alloc_.TrimTail(), b);
  EXPECT_EQ(alloc_.file_end(), b);
  EXPECT_EQ(alloc_.free_bytes(), 0u);
  EXPECT_EQ(alloc_.num_free_extents(), 0u);
  // Nothing more to trim.
  EXPECT_EQ(alloc_.TrimTail(), b);
  EXPECT_EQ(alloc_.Allocate(10, 1), b);
  (void)a;
}

TEST_F(AllocatorTest, TrimTailKeepsPendingTailSpace) {
  alloc_.Reset(D + 1000, {});
  alloc_.Free(D + 500, 500);  // pending, at the tail
  EXPECT_EQ(alloc_.TrimTail(), D + 1000);
  EXPECT_EQ(alloc_.file_end(), D + 1000);
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.TrimTail(), D + 500);
  EXPECT_EQ(alloc_.file_end(), D + 500);
}

TEST_F(AllocatorTest, TrimTailKeepsFreeSpaceBeforeTheTail) {
  alloc_.Reset(D + 1000, {{D + 100, 100}});
  EXPECT_EQ(alloc_.TrimTail(), D + 1000);
  EXPECT_EQ(alloc_.free_bytes(), 100u);
  EXPECT_EQ(alloc_.TrimTail(), D + 1000);
}

TEST_F(AllocatorTest, TrimTailOnEmptyAllocatorIsANoOp) {
  EXPECT_EQ(alloc_.TrimTail(), D);
  EXPECT_EQ(alloc_.file_end(), D);
}

// ------------------------------------------------------------ randomized

// A byte-level model: who owns each byte of [kDataStart, file_end).
enum class Own : uint8_t { kUnowned, kLive, kPending };

struct Live {
  uint64_t addr, len;
  bool fresh;  // allocated since the last MarkDurable
};

class AllocatorModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(AllocatorModelTest, NeverOverlapsLiveOrPendingSpace) {
  std::mt19937_64 rng(GetParam());
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };

  // A committed state: 256 KiB with some free extents, the rest owned by
  // committed objects of random sizes.
  std::vector<Own> own(256 * 1024, Own::kLive);
  std::vector<Extent> initial_free;
  std::vector<Live> live;
  for (uint64_t pos = 0; pos < own.size();) {
    uint64_t len = std::min<uint64_t>(uniform(1, 8000), own.size() - pos);
    if (uniform(0, 2) == 0) {
      initial_free.push_back({D + pos, len});
      std::fill(own.begin() + pos, own.begin() + pos + len, Own::kUnowned);
    } else {
      live.push_back({D + pos, len, false});
    }
    pos += len;
  }
  Allocator alloc;
  alloc.Reset(D + own.size(), initial_free);

  auto at = [&](uint64_t addr) -> Own& { return own[addr - D]; };
  auto check_all = [&] {
    ASSERT_EQ(alloc.file_end(), D + own.size());
    uint64_t unowned = 0, pending = 0;
    std::vector<Extent> runs;  // maximal runs of unowned or pending bytes
    for (uint64_t i = 0; i < own.size(); ++i) {
      if (own[i] == Own::kLive) continue;
      (own[i] == Own::kUnowned ? unowned : pending)++;
      if (!runs.empty() && runs.back().addr + runs.back().len == D + i)
        ++runs.back().len;
      else
        runs.push_back({D + i, 1});
    }
    EXPECT_EQ(alloc.free_bytes(), unowned + pending);
    EXPECT_EQ(alloc.Unreferenced(), runs);
    for (const Live& l : live) ASSERT_EQ(alloc.IsFresh(l.addr), l.fresh) << l.addr;
  };

  std::vector<Extent> pending;                   // freed committed ranges, until MarkDurable
  int reused = 0, pending_frees = 0, trims = 0;  // the run must exercise each path
  const uint64_t aligns[] = {1, 8, 64, 4096};
  for (int op = 0; op < 3000; ++op) {
    uint64_t kind = uniform(0, 99);
    if (kind < 45) {
      uint64_t len = uniform(0, 3) == 0 ? uniform(1, 20000) : uniform(1, 600);
      uint64_t align = aligns[uniform(0, 3)];
      uint64_t old_end = alloc.file_end();
      uint64_t a = alloc.Allocate(len, align);
      ASSERT_EQ(a % align, 0u);
      ASSERT_GE(a, D);
      ASSERT_LE(a + len, alloc.file_end());
      if (alloc.file_end() > old_end) own.resize(alloc.file_end() - D, Own::kUnowned);
      for (uint64_t x = a; x < a + len; ++x) {
        ASSERT_EQ(at(x), Own::kUnowned) << "op " << op << ": allocation [" << a << ", " << a + len << ") reuses byte "
                                        << x << " which is " << (at(x) == Own::kLive ? "live" : "pending");
        at(x) = Own::kLive;
      }
      ASSERT_TRUE(alloc.IsFresh(a));
      live.push_back({a, len, true});
      if (a + len <= old_end) ++reused;
    } else if (kind < 85 && !live.empty()) {
      size_t i = uniform(0, live.size() - 1);
      Live l = live[i];
      live.erase(live.begin() + i);
      alloc.Free(l.addr, l.len);
      for (uint64_t x = l.addr; x < l.addr + l.len; ++x) at(x) = l.fresh ? Own::kUnowned : Own::kPending;
      if (!l.fresh) {
        pending.push_back({l.addr, l.len});
        ++pending_frees;
      }
    } else if (kind < 92) {
      alloc.MarkDurable();
      for (const Extent& e : pending) std::fill_n(own.begin() + (e.addr - D), e.len, Own::kUnowned);
      pending.clear();
      for (auto& l : live) l.fresh = false;
    } else {
      uint64_t old_end = alloc.file_end();
      uint64_t end = alloc.TrimTail();
      ASSERT_LE(end, old_end);
      ASSERT_GE(end, D);
      for (uint64_t x = end; x < old_end; ++x) {
        ASSERT_EQ(at(x), Own::kUnowned) << "TrimTail dropped byte " << x << " which is not free";
      }
      // Only whole free tail space goes: what remains does not end free.
      if (end > D && end < old_end) {
        ASSERT_NE(at(end - 1), Own::kUnowned);
      }
      own.resize(end - D);
      trims += end < old_end;
    }
    if (op % 100 == 0) {
      SCOPED_TRACE("after op " + std::to_string(op));
      check_all();
      if (HasFatalFailure()) return;
    }
  }
  check_all();
  EXPECT_GT(reused, 100);
  EXPECT_GT(pending_frees, 100);
  EXPECT_GT(trims, 5);
}

INSTANTIATE_TEST_SUITE_P(RandomSeeds, AllocatorModelTest, ::testing::Values(1, 2, 3, 4));

TEST_F(AllocatorTest, ExtentsFreedByACommitAreHeldUntilNoOlderReader) {
  alloc_.Reset(D + 10000, {});
  alloc_.Free(D, 100);  // referenced by the last commit: pending
  alloc_.Free(D + 1000, 100);
  alloc_.MarkDurable(7, 1000);  // the commit of generation 7, made at t=1000
  EXPECT_EQ(alloc_.held_bytes(), 200u);
  EXPECT_EQ(alloc_.free_bytes(), 200u);
  EXPECT_EQ(alloc_.Allocate(100, 1), D + 10000) << "a held extent is not handed out";
  // A reader of generation 6 still reads a state that uses them.
  EXPECT_EQ(alloc_.Release(6, 1000), 0u);
  EXPECT_EQ(alloc_.held_bytes(), 200u);
  // Readers of 7 or later (or none) do not.
  EXPECT_EQ(alloc_.Release(7, 1000), 200u);
  EXPECT_EQ(alloc_.held_bytes(), 0u);
  EXPECT_EQ(alloc_.Allocate(100, 1), D);
}

TEST_F(AllocatorTest, AReuseDelayKeepsExtentsHeldUntilItPassed) {
  alloc_.Reset(D + 10000, {});
  alloc_.Free(D, 100);
  alloc_.MarkDurable(3, 5000);
  EXPECT_EQ(alloc_.Release(UINT64_MAX, 4999), 0u);  // made_by before the commit
  EXPECT_EQ(alloc_.Release(UINT64_MAX, 5000), 100u);
}

TEST_F(AllocatorTest, TheFreeListTagsHeldAndPendingExtentsAndResetHoldsThemAgain) {
  alloc_.Reset(D + 10000, {{D + 5000, 100}});  // free for everyone
  alloc_.Free(D, 100);
  alloc_.MarkDurable(4, 40);
  alloc_.Free(D + 100, 50);  // adjacent to the held one, freed by the next commit
  const std::vector<FreedExtent> list = alloc_.Unreferenced(5, 50);
  EXPECT_EQ(list, (std::vector<FreedExtent>{{D, 100, 4, 40}, {D + 100, 50, 5, 50}, {D + 5000, 100, 0, 0}}))
      << "neighbours with different tags stay apart";
  // A writer that opens this state later holds what readers may still use.
  Allocator again;
  again.Reset(D + 10000, list);
  EXPECT_EQ(again.held_bytes(), 150u);
  EXPECT_EQ(again.free_bytes(), 250u);
  EXPECT_EQ(again.Release(4, 100), 100u);  // a reader of generation 4 remains
  EXPECT_EQ(again.Release(UINT64_MAX, 100), 50u);
  EXPECT_EQ(again.Unreferenced(), (std::vector<FreedExtent>{{D, 150}, {D + 5000, 100}}));
}

// An extent this open allocated is seen only by the states from its birth
// (the commit that made it durable) to the commit before the one that freed
// it: a reader of an older state does not keep it.
TEST_F(AllocatorTest, HeldExtentsAreKeptOnlyForReadersThatCanSeeThem) {
  alloc_.Reset(D + 10000, {});
  const uint64_t a = alloc_.Allocate(100, 1);
  alloc_.MarkDurable(5, 10);  // a is born at 5
  alloc_.Free(a, 100);
  alloc_.Free(D, 100);        // in the state this open started from: born "0"
  alloc_.MarkDurable(8, 20);  // both freed by the commit of 8
  std::vector<std::pair<uint64_t, uint64_t>> asked;
  auto readers = [&](std::vector<uint64_t> gens) {
    return [&asked, gens](uint64_t born, uint64_t freed) {
      asked.emplace_back(born, freed);
      for (uint64_t g : gens)
        if (g >= born && g < freed) return true;
      return false;
    };
  };
  // A reader of generation 3 sees D (born before it) but not a.
  EXPECT_EQ(alloc_.Release(readers({3}), 20), 100u);
  EXPECT_EQ(alloc_.held_bytes(), 100u);
  EXPECT_EQ(asked, (std::vector<std::pair<uint64_t, uint64_t>>{{5, 8}, {0, 8}}))
      << "one question per (born, freed), never per extent";
  // A reader of generation 8 sees neither.
  EXPECT_EQ(alloc_.Release(readers({8}), 20), 100u);
  EXPECT_EQ(alloc_.held_bytes(), 0u);
}

TEST_F(AllocatorTest, AReaderOfAnOldStateKeepsNoRewrittenExtents) {
  // A writer rewrites one extent's worth a thousand times while a reader
  // stays on generation 1: the file stays within the extents the reader
  // sees plus one rewrite.
  alloc_.Reset(D + 100, {});
  const auto reader_at_1 = [](uint64_t born, uint64_t freed) { return born <= 1 && 1 < freed; };
  alloc_.Free(D, 100);  // the reader's copy, replaced by the first rewrite
  uint64_t last = alloc_.Allocate(100, 1);
  alloc_.MarkDurable(2, 1);
  for (uint64_t g = 3; g < 1003; ++g) {
    alloc_.Free(last, 100);
    last = alloc_.Allocate(100, 1);
    alloc_.MarkDurable(g, 1);
    alloc_.Release(reader_at_1, 1);
  }
  EXPECT_LE(alloc_.file_end(), D + 400);
  EXPECT_EQ(alloc_.held_bytes(), 100u) << "the reader's own copy";
}

TEST_F(AllocatorTest, HeldExtentsAtTheTailAreNotTrimmed) {
  alloc_.Reset(D + 1000, {});
  alloc_.Free(D + 900, 100);
  alloc_.MarkDurable(2, 1);
  EXPECT_EQ(alloc_.TrimTail(), D + 1000) << "a reader may still read the last bytes";
  alloc_.Release(UINT64_MAX, 1);
  EXPECT_EQ(alloc_.TrimTail(), D + 900);
}

}  // namespace allocator_test
}  // namespace
}  // namespace slabfs::engine
