#include "fusefs/xattr_ops.h"

#include <sys/xattr.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "fusefs/layout_ops.h"
#include "fusefs/request.h"
#include "fusefs/xattr.h"

namespace slabfs::fusefs {
namespace {

// Replies with an xattr value or name list, or asks for a bigger buffer.
int ReplyXattrBytes(fuse_req_t req, std::string_view op, Filesystem& fs, fuse_ino_t ino,
                    std::string_view bytes, size_t size) {
  if (size == 0) {  // the caller asks how big a buffer it needs
    fuse_reply_xattr(req, bytes.size());
    return 0;
  }
  if (size < bytes.size()) {
    return QuietRefuseErrno(op, [&] { return Describe(fs, ino); }, ERANGE,
                            fmt::format("value has {} bytes, buffer {}", bytes.size(), size));
  }
  fuse_reply_buf(req, bytes.data(), bytes.size());
  return 0;
}

}  // namespace

void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Guard(req, "getxattr", [&] {
    Filesystem& fs = Fs(req);
    XattrName x = ClassifyXattr(name);
    const std::string op = fmt::format("getxattr {}", name);
    auto where = [&] { return Describe(fs, ino); };
    switch (x.space) {
      case XattrSpace::kOther:
        // security.capability, system.posix_acl_access...: asked on every
        // write and by ls; "no such attribute" keeps them quiet.
        return QuietRefuseErrno(op, where, ENODATA, "only user.* attributes exist");
      case XattrSpace::kSlab: {
        auto info = fs.container.Stat(ino);
        if (!info) return Refuse(op, where(), info.error());
        if (ino == kRootId) {
          auto value = RootSlabXattrValue(fs.container.cache_stats(), fs.container.space(), x.name);
          if (!value) return QuietRefuseErrno(op, where, ENODATA, value.error().message());
          return ReplyXattrBytes(req, op, fs, ino, *value, size);
        }
        if (info->kind != ObjectKind::kDataset) {
          return QuietRefuseErrno(op, where, ENODATA, "groups have no user.slab.*");
        }
        auto ds = fs.container.OpenDataset(ino);
        if (!ds) return Refuse(op, where(), ds.error());
        auto value = SlabXattrValue(ds->info(), x.name, [&] { return ds->CountDefined(); });
        if (!value) {
          if (value.error().code() == Code::kNotFound) {
            return QuietRefuseErrno(op, where, ENODATA, value.error().message());
          }
          return Refuse(op, where(), value.error());
        }
        return ReplyXattrBytes(req, op, fs, ino, *value, size);
      }
      case XattrSpace::kUser: {
        auto attr = fs.container.GetAttribute(ino, x.name);
        if (!attr) {
          // The xattr protocol spells "no attribute by that name" ENODATA.
          if (attr.error().code() == Code::kNotFound) {
            return QuietRefuseErrno(op, where, ENODATA, attr.error().message());
          }
          return Refuse(op, where(), attr.error());
        }
        return ReplyXattrBytes(req, op, fs, ino, attr->ToText(), size);
      }
    }
    return EIO;
  });
}

void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Guard(req, "listxattr", [&] {
    Filesystem& fs = Fs(req);
    auto info = fs.container.Stat(ino);
    if (!info) return Refuse("listxattr", Describe(fs, ino), info.error());
    std::vector<std::string> names;
    // The root's figures are read by name only: listed, they would be
    // copied by rsync -X and cp -a, which then fail to set them back.
    if (info->kind == ObjectKind::kDataset) names = SlabXattrNames();
    auto attrs = fs.container.ListAttributes(ino);
    if (!attrs) return Refuse("listxattr", Describe(fs, ino), attrs.error());
    for (const std::string& a : *attrs) names.push_back(std::string(kUserPrefix) + a);
    return ReplyXattrBytes(req, "listxattr", fs, ino, JoinXattrNames(names), size);
  });
}

void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags) {
  Guard(req, "setxattr", [&] {
    Filesystem& fs = Fs(req);
    XattrName x = ClassifyXattr(name);
    const std::string op = fmt::format("setxattr {}", name);
    if (x.space == XattrSpace::kSlab) {
      auto info = fs.container.Stat(ino);
      if (!info) return Refuse(op, Describe(fs, ino), info.error());
      if (info->kind != ObjectKind::kDataset) {
        return Refuse(op, Describe(fs, ino), Status::PermissionDenied("groups have no user.slab.*"));
      }
      if (flags & XATTR_CREATE) {
        return Refuse(op, Describe(fs, ino), Status::AlreadyExists("user.slab.* always exist (XATTR_CREATE)"));
      }
      if (int err = SetLayoutXattr(fs, ino, x.name, std::string_view(value, size))) return err;
      fuse_reply_err(req, 0);
      return 0;
    }
    if (x.space == XattrSpace::kOther) {
      return Refuse(op, Describe(fs, ino),
                    Status::NotSupported("only user.* attributes can be set"));
    }
    if (flags & (XATTR_CREATE | XATTR_REPLACE)) {
      auto existing = fs.container.GetAttribute(ino, x.name);
      if (!existing && existing.error().code() != Code::kNotFound) {
        return Refuse(op, Describe(fs, ino), existing.error());
      }
      if ((flags & XATTR_CREATE) && existing) {
        return Refuse(op, Describe(fs, ino),
                      Status::AlreadyExists("the attribute exists (XATTR_CREATE)"));
      }
      if ((flags & XATTR_REPLACE) && !existing) {
        return RefuseErrno(op, Describe(fs, ino), ENODATA, "no such attribute (XATTR_REPLACE)");
      }
    }
    Status s = fs.container.SetAttribute(ino, x.name, Attribute::String(std::string(value, size)));
    if (!s.ok()) return Refuse(op, Describe(fs, ino), s);
    CommitChange(fs, op, Describe(fs, ino));
    fuse_reply_err(req, 0);
    return 0;
  });
}

void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  Guard(req, "removexattr", [&] {
    Filesystem& fs = Fs(req);
    XattrName x = ClassifyXattr(name);
    const std::string op = fmt::format("removexattr {}", name);
    if (x.space == XattrSpace::kSlab) {
      return Refuse(op, Describe(fs, ino),
                    Status::PermissionDenied("user.slab.* attributes are read-only metadata"));
    }
    if (x.space == XattrSpace::kOther) {
      return Refuse(op, Describe(fs, ino),
                    Status::NotSupported("only user.* attributes can be removed"));
    }
    Status s = fs.container.DeleteAttribute(ino, x.name);
    if (!s.ok()) {
      if (s.code() == Code::kNotFound) {
        return RefuseErrno(op, Describe(fs, ino), ENODATA, s.message());
      }
      return Refuse(op, Describe(fs, ino), s);
    }
    CommitChange(fs, op, Describe(fs, ino));
    fuse_reply_err(req, 0);
    return 0;
  });
}

}  // namespace slabfs::fusefs
