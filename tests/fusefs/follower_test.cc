// FollowStep: what a follow mount tells the kernel after a refresh.
#include "fusefs/follower.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "tests/testutil/status_matchers.h"

namespace slabfs::fusefs {
namespace {

struct Recorder {
  std::set<std::pair<uint64_t, std::string>> names;
  std::set<uint64_t> data, attrs, touched;
  FollowHooks Hooks() {
    FollowHooks h;
    h.forget_name = [this](uint64_t p, std::string_view n) { names.insert({p, std::string(n)}); };
    h.forget_data = [this](uint64_t i) { data.insert(i); };
    h.forget_attributes = [this](uint64_t i) { attrs.insert(i); };
    h.touch = [this](uint64_t i) { touched.insert(i); };
    return h;
  }
};

TEST(FollowStepTest, TellsTheKernelWhatChanged) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "slabfs-follow-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string path = tmpl + "/c.slab";
  {
    ASSERT_OK_AND_ASSIGN(auto w, Container::Open(path, {.create = true}));
    ASSERT_OK(w->MakeGroups("/g"));
    DatasetOptions o{.dtype = DType::kU1, .shape = {10}};
    ASSERT_OK(w->CreateDataset("/g/a", o));
    ASSERT_OK(w->CreateDataset("/b", o));
    ASSERT_OK(w->Commit());

    ASSERT_OK_AND_ASSIGN(auto r, Container::Open(path, {.read_only = true}));
    Recorder none;
    ASSERT_OK(FollowStep(*r, none.Hooks()));
    EXPECT_TRUE(none.names.empty() && none.data.empty() && none.attrs.empty() && none.touched.empty());

    ASSERT_OK_AND_ASSIGN(ObjectId g, w->Resolve("/g"));
    ASSERT_OK_AND_ASSIGN(Dataset a, w->OpenDataset("/g/a"));
    ASSERT_OK_AND_ASSIGN(ObjectId b, w->Resolve("/b"));
    const uint8_t x[10] = {1};
    ASSERT_OK(a.WriteElements(0, 10, x));
    ASSERT_OK(w->Remove("/b"));
    ASSERT_OK(w->Commit());

    Recorder rec;
    ASSERT_OK(FollowStep(*r, rec.Hooks()));
    EXPECT_EQ(rec.names, (std::set<std::pair<uint64_t, std::string>>{{kRootId, "b"}}));
    EXPECT_EQ(rec.data, (std::set<uint64_t>{a.id()}));
    EXPECT_TRUE(rec.attrs.count(g) && rec.attrs.count(kRootId) && rec.attrs.count(b));
    EXPECT_TRUE(rec.touched.count(a.id()) && rec.touched.count(g));
    EXPECT_FALSE(rec.data.count(g));
  }
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace slabfs::fusefs
