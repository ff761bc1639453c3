// Writes a dataset into a new container, commits, reopens it and reads a
// window back: the installed headers and libslabfs, nothing else.
//
//   consumer FILE     prints "ok SUM" (exit 0) or the failure (exit 1)
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include <slabfs/slabfs.h>

namespace {

int Fail(const char* what, const slabfs::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  {
    auto c = slabfs::Container::Open(argv[1], {.create = true});
    if (!c) return Fail("create", c.error());
    if (auto g = (*c)->MakeGroups("/detector"); !g) return Fail("make groups", g.error());
    slabfs::DatasetOptions o{.dtype = slabfs::DType::kU2,
                             .shape = {8, 128, 128},
                             .chunks = {1, 64, 64},
                             .filters = "shuffle,deflate=6,checksum"};
    auto ds = (*c)->CreateDataset("/detector/frames", o);
    if (!ds) return Fail("create dataset", ds.error());
    std::vector<uint16_t> frame(128 * 128);
    std::iota(frame.begin(), frame.end(), uint16_t{0});
    if (auto s = ds->Write(slabfs::Slab::Box({3, 0, 0}, {1, 128, 128}), frame.data()); !s.ok()) {
      return Fail("write", s);
    }
    if (auto s = (*c)->Commit(); !s.ok()) return Fail("commit", s);
  }
  auto c = slabfs::Container::Open(argv[1]);
  if (!c) return Fail("open", c.error());
  auto ds = (*c)->OpenDataset("/detector/frames");
  if (!ds) return Fail("open dataset", ds.error());
  std::vector<uint16_t> roi(4 * 4);
  if (auto s = ds->Read(slabfs::Slab::Box({3, 10, 20}, {1, 4, 4}), roi.data()); !s.ok()) {
    return Fail("read", s);
  }
  uint64_t sum = std::accumulate(roi.begin(), roi.end(), uint64_t{0});
  std::printf("ok %llu\n", static_cast<unsigned long long>(sum));
  return 0;
}
