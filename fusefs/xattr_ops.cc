#include "fusefs/xattr_ops.h"

#include <sys/xattr.h>

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "fusefs/attr_types.h"
#include "fusefs/layout_ops.h"
#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/store_changes.h"
#include "fusefs/xattr.h"

namespace slabfs::fusefs {
namespace {

// Replies with an xattr value or name list, or asks for a bigger buffer.
int ReplyXattrBytes(fuse_req_t req, std::string_view op, Filesystem& fs, fuse_ino_t ino, std::string_view bytes,
                    size_t size) {
  if (size == 0) {  // the caller asks how big a buffer it needs
    fuse_reply_xattr(req, bytes.size());
    return 0;
  }
  if (size < bytes.size()) {
    return QuietRefuseErrno(
        op, [&] { return Describe(fs, ino); }, ERANGE,
        fmt::format("value has {} bytes, buffer {}", bytes.size(), size));
  }
  fuse_reply_buf(req, bytes.data(), bytes.size());
  return 0;
}

// setxattr user.slab.type.NAME (attr_types.h): NAME takes the type now if
// its value reads as that type, else the type waits for its next value.
int SetAttrType(Filesystem& fs, fuse_ino_t ino, std::string_view name, std::string_view text, int flags) {
  const std::string op = fmt::format("setxattr {}{}", kTypePrefix, name);
  auto existing = fs.store.GetAttribute(ino, name);
  if (!existing && existing.error().code() != Code::kNotFound) {
    return Refuse(op, Describe(fs, ino), existing.error());
  }
  const bool typed = existing && existing->kind == Attribute::Kind::kNumeric;
  if ((flags & XATTR_CREATE) && typed) {
    return Refuse(op, Describe(fs, ino), Status::AlreadyExists("the attribute has a type (XATTR_CREATE)"));
  }
  if ((flags & XATTR_REPLACE) && !typed) {
    return RefuseErrno(op, Describe(fs, ino), ENODATA, "the attribute has no type (XATTR_REPLACE)");
  }
  auto t = ParseAttrType(text);
  if (!t) return Refuse(op, Describe(fs, ino), t.error());
  if (!existing) {
    // tar and rsync may set the type before the value.
    fs.attr_types.Wait(ino, name, *t);
    Log().debug("{} {}: waits for user.{}", op, Describe(fs, ino), name);
    return 0;
  }
  auto value = ParseTypedValue(*t, existing->ToText());
  if (!value) {
    // A value of another type that the copy's own value replaces next.
    fs.attr_types.Wait(ino, name, *t);
    Log().info("{} {}: user.{} '{}' is not of that type ({}); the type applies to its next value", op,
               Describe(fs, ino), name, existing->ToText(), value.error().message());
    return 0;
  }
  fs.attr_types.Drop(ino, name);
  if (value->kind == existing->kind && value->dtype == existing->dtype && value->data == existing->data) return 0;
  Status s = SetObjectAttribute(fs, ino, name, *value);
  if (!s.ok()) return Refuse(op, Describe(fs, ino), s);
  CommitChange(fs, op, Describe(fs, ino));
  return 0;
}

// removexattr user.slab.type.NAME: NAME becomes a string (its text); a
// type still waiting for a value is dropped.
int RemoveAttrType(Filesystem& fs, fuse_ino_t ino, std::string_view name) {
  const std::string op = fmt::format("removexattr {}{}", kTypePrefix, name);
  const bool was_waiting = fs.attr_types.Drop(ino, name);
  auto existing = fs.store.GetAttribute(ino, name);
  if (!existing && existing.error().code() != Code::kNotFound) {
    return Refuse(op, Describe(fs, ino), existing.error());
  }
  if (!existing || existing->kind != Attribute::Kind::kNumeric) {
    if (was_waiting) return 0;
    return RefuseErrno(op, Describe(fs, ino), ENODATA,
                       existing ? "a string attribute has no type" : "no such attribute");
  }
  Status s = SetObjectAttribute(fs, ino, name, Attribute::String(existing->ToText()));
  if (!s.ok()) return Refuse(op, Describe(fs, ino), s);
  CommitChange(fs, op, Describe(fs, ino));
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
        auto info = fs.store.Stat(ino);
        if (!info) return Refuse(op, where(), info.error());
        if (ino == kRootId) {
          auto value = RootSlabXattrValue(fs.store.cache_stats(), SpaceOf(fs), x.name, LastRefusal(), fs.store.format(),
                                          x.name == "skipped" ? fs.store.Skipped() : std::vector<SkippedObject>{});
          if (!value) return QuietRefuseErrno(op, where, ENODATA, value.error().message());
          return ReplyXattrBytes(req, op, fs, ino, *value, size);
        }
        if (info->kind != ObjectKind::kDataset) {
          return QuietRefuseErrno(op, where, ENODATA, "groups have no user.slab.*");
        }
        auto ds = OpenFileData(fs, ino);
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
      case XattrSpace::kType: {
        // user.slab.type.NAME: numeric attributes only (attr_types.h).
        auto attr = fs.store.GetAttribute(ino, x.name);
        if (!attr) {
          if (attr.error().code() == Code::kNotFound) {
            return QuietRefuseErrno(op, where, ENODATA, attr.error().message());
          }
          return Refuse(op, where(), attr.error());
        }
        const std::string type = FormatAttrType(*attr);
        if (type.empty()) return QuietRefuseErrno(op, where, ENODATA, "a string attribute has no type");
        return ReplyXattrBytes(req, op, fs, ino, type, size);
      }
      case XattrSpace::kUser: {
        auto attr = fs.store.GetAttribute(ino, x.name);
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
    auto info = fs.store.Stat(ino);
    if (!info) return Refuse("listxattr", Describe(fs, ino), info.error());
    std::vector<std::string> names;
    // The root's figures are read by name only: listed, they would be
    // copied by rsync -X and cp -a, which then fail to set them back.
    if (info->kind == ObjectKind::kDataset) names = SlabXattrNames();
    auto attrs = fs.store.ListAttributes(ino);
    if (!attrs) return Refuse("listxattr", Describe(fs, ino), attrs.error());
    for (const std::string& a : *attrs) {
      names.push_back(std::string(kUserPrefix) + a);
      // A numeric attribute's type follows its value (attr_types.h), where
      // the name fits in the 255 bytes an xattr name may have.
      if (kTypePrefix.size() + a.size() > kMaxXattrNameBytes) continue;
      auto attr = fs.store.GetAttribute(ino, a);
      if (attr && attr->kind == Attribute::Kind::kNumeric) names.push_back(std::string(kTypePrefix) + a);
    }
    return ReplyXattrBytes(req, "listxattr", fs, ino, JoinXattrNames(names), size);
  });
}

void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags) {
  Guard(req, "setxattr", [&] {
    Filesystem& fs = Fs(req);
    XattrName x = ClassifyXattr(name);
    const std::string op = fmt::format("setxattr {}", name);
    std::optional<RefusalLevelFloor> loud;
    if (x.space != XattrSpace::kOther) loud.emplace(spdlog::level::warn);
    if (x.space == XattrSpace::kSlab) {
      if (fs.container == nullptr) {
        // A foreign store's layout is its own metadata (.zarray, zarr.json).
        if (int err = SetStoreLayoutXattr(fs, ino, x.name, std::string_view(value, size))) return err;
        fuse_reply_err(req, 0);
        return 0;
      }
      auto info = fs.container->Stat(ino);
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
      return Refuse(op, Describe(fs, ino), Status::NotSupported("only user.* attributes can be set"));
    }
    const std::string_view text(value, size);
    if (x.space == XattrSpace::kType) {
      if (int err = SetAttrType(fs, ino, x.name, text, flags)) return err;
      fuse_reply_err(req, 0);
      return 0;
    }
    auto existing = fs.store.GetAttribute(ino, x.name);
    if (!existing && existing.error().code() != Code::kNotFound) {
      return Refuse(op, Describe(fs, ino), existing.error());
    }
    if ((flags & XATTR_CREATE) && existing) {
      return Refuse(op, Describe(fs, ino), Status::AlreadyExists("the attribute exists (XATTR_CREATE)"));
    }
    if ((flags & XATTR_REPLACE) && !existing) {
      return RefuseErrno(op, Describe(fs, ino), ENODATA, "no such attribute (XATTR_REPLACE)");
    }
    // The text as a value: of the type user.slab.type.NAME set for it, or
    // of the type it has if it reads so without loss, else a string.
    Attribute a = Attribute::String(std::string(text));
    if (std::optional<AttrType> t = fs.attr_types.Take(ino, x.name)) {
      auto typed = ParseTypedValue(*t, text);
      if (!typed) {
        fs.attr_types.Wait(ino, x.name, *t);  // still waiting for a value of that type
        return Refuse(op, Describe(fs, ino),
                      typed.error().WithContext(fmt::format("user.slab.type.{} is set", x.name)));
      }
      a = std::move(*typed);
    } else if (existing && existing->ToText() == text) {
      // The text it shows already (cp -a, rsync -X and tar --xattrs copy
      // every attribute back): nothing changes. Written again, a Zarr
      // attribute's JSON true, null, object or nested list would become the
      // number or string that its text reads as.
      fuse_reply_err(req, 0);
      return 0;
    } else if (existing && existing->kind == Attribute::Kind::kNumeric) {
      if (std::optional<Attribute> kept = ReadAsKnownType(existing->dtype, text)) a = std::move(*kept);
    }
    Status s = SetObjectAttribute(fs, ino, x.name, a);
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
      return Refuse(op, Describe(fs, ino), Status::PermissionDenied("user.slab.* attributes are read-only metadata"));
    }
    if (x.space == XattrSpace::kOther) {
      return Refuse(op, Describe(fs, ino), Status::NotSupported("only user.* attributes can be removed"));
    }
    if (x.space == XattrSpace::kType) {
      if (int err = RemoveAttrType(fs, ino, x.name)) return err;
      fuse_reply_err(req, 0);
      return 0;
    }
    fs.attr_types.Drop(ino, x.name);
    Status s = RemoveObjectAttribute(fs, ino, x.name);
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
