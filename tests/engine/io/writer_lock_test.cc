// The lock record and the wait for an unmounting daemon (writer_lock.h).
#include "engine/io/writer_lock.h"

#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "engine/format/layout.h"

namespace slabfs::engine {
namespace {

TEST(WriterLockTest, RecordRoundTrips) {
  LockRecord r = OwnLockRecord("slabfs", "/mnt/data dir");
  const std::string bytes = EncodeLockRecord(r);
  ASSERT_EQ(bytes.size(), kLockRecordBytes);
  auto back = DecodeLockRecord(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->pid, std::to_string(getpid()));
  EXPECT_EQ(back->program, "slabfs");
  EXPECT_EQ(back->mount, "/mnt/data dir");
  EXPECT_FALSE(back->mntns.empty());
  EXPECT_EQ(back->host, r.host);
  EXPECT_NE(DescribeHolder(back).find("slabfs (pid " + r.pid), std::string::npos);
  EXPECT_NE(DescribeHolder(back).find("mounted at /mnt/data dir"), std::string::npos);

  LockRecord plain = OwnLockRecord("slab", "");
  auto p = DecodeLockRecord(EncodeLockRecord(plain));
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->mount.empty());
  EXPECT_EQ(DescribeHolder(p).find("mounted"), std::string::npos);
}

TEST(WriterLockTest, GarbageIsNoRecord) {
  EXPECT_FALSE(DecodeLockRecord(std::string(kLockRecordBytes, '\0')).has_value());
  EXPECT_FALSE(DecodeLockRecord("SLABLOCK\npid=1\n").has_value());  // no program
  EXPECT_FALSE(DecodeLockRecord(std::string(kLockRecordBytes, 'x')).has_value());
  EXPECT_EQ(DescribeHolder(std::nullopt), "another process");
  // Control characters are not printed as they are.
  auto r = DecodeLockRecord(std::string("SLABLOCK\nprogram=ev\x1b[1mil\npid=3\n"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->program.find('\x1b'), std::string::npos);
}

TEST(WriterLockTest, AMountPointTooLongIsLeftOut) {
  const std::string bytes = EncodeLockRecord(OwnLockRecord("slabfs", "/" + std::string(600, 'm')));
  ASSERT_EQ(bytes.size(), kLockRecordBytes);
  auto r = DecodeLockRecord(bytes);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->mount.empty());
}

TEST(WriterLockTest, MountPoints) {
  EXPECT_TRUE(IsMountPoint("/"));
  EXPECT_FALSE(IsMountPoint("/no/such/mount/point"));
}

TEST(WriterLockTest, OnlyALiveDaemonHereWhoseMountIsGoneIsUnmounting) {
  // This process stands in for the daemon: alive, on this host.
  LockRecord r = OwnLockRecord("slabfs", "/no/such/mount/point");
  EXPECT_TRUE(HolderIsUnmounting(r));
  LockRecord mounted = OwnLockRecord("slabfs", "/");
  EXPECT_FALSE(HolderIsUnmounting(mounted));
  LockRecord tool = OwnLockRecord("slab", "/no/such/mount/point");
  EXPECT_FALSE(HolderIsUnmounting(tool));
  LockRecord elsewhere = r;
  elsewhere.host = "another-host";
  EXPECT_FALSE(HolderIsUnmounting(elsewhere));
  LockRecord other_ns = r;
  other_ns.mntns = "mnt:[1]";
  EXPECT_FALSE(HolderIsUnmounting(other_ns));
  LockRecord gone = r;
  gone.pid = "2147483646";  // no such process
  EXPECT_FALSE(HolderIsUnmounting(gone));
  LockRecord bad_pid = r;
  bad_pid.pid = "12x";
  EXPECT_FALSE(HolderIsUnmounting(bad_pid));
}

}  // namespace
}  // namespace slabfs::engine
