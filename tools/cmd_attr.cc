#include "tools/cmd_attr.h"

#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/algorithm/string/split.hpp>
#include <boost/algorithm/string/trim.hpp>

#include "slabfs/container.h"
#include "slabfs/store.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

Status ListAttributes(const Store& c, ObjectId id, std::string_view path, std::ostream& out) {
  auto names = c.ListAttributes(id);
  if (!names) return AddContext(names.error(), path);
  for (const std::string& name : *names) {
    auto value = c.GetAttribute(id, name);
    if (!value) return AddContext(value.error(), path);
    out << name << " = " << value->ToText() << '\n';
  }
  return Status::OK();
}

}  // namespace

Result<Attribute> MakeAttribute(const std::string& value, bool force_string, const std::string& dtype) {
  Attribute a;
  if (force_string) {
    a = Attribute::String(value);
  } else if (!dtype.empty()) {
    auto t = ParseDType(dtype);
    if (!t) return Err(AddContext(t.error(), fmt::format("--dtype '{}'", dtype)));
    std::vector<std::string> items;
    boost::algorithm::split(items, value, [](char ch) { return ch == ','; });
    std::string bytes;
    for (std::string& item : items) {
      boost::algorithm::trim(item);
      auto encoded = EncodeScalar(*t, item);
      if (!encoded) {
        return Err(Status::InvalidArgument(
            fmt::format("value '{}' for dtype {}: {}", item, DTypeName(*t), encoded.error().message())));
      }
      bytes += *encoded;
      if (bytes.size() > kMaxAttributeBytes) break;
    }
    a = Attribute::Numbers(*t, std::move(bytes));
  } else {
    a = Attribute::FromText(value);
  }
  if (a.data.size() > kMaxAttributeBytes) {
    return Err(Status::InvalidArgument(
        fmt::format("the value is over {} bytes, the most an attribute holds", kMaxAttributeBytes)));
  }
  return a;
}

Status RunAttr(const AttrOptions& o, std::ostream& out) {
  SLABFS_RETURN_IF_ERROR(CheckObjectPath(o.path));
  if (o.name) SLABFS_RETURN_IF_ERROR(AddContext(ValidateName(*o.name), "attribute name"));
  if (o.remove && (!o.name || o.value)) {
    return Status::InvalidArgument("--delete takes a NAME and no VALUE");
  }
  if ((o.force_string || !o.dtype.empty()) && !o.value) {
    return Status::InvalidArgument("--string and --dtype apply only when setting a VALUE");
  }

  if (!o.remove && !o.value) {
    SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Store> c, OpenStoreForReading(o.file));
    auto id = c->Resolve(o.path);
    if (!id) return AddContext(id.error(), o.path);
    if (!o.name) return ListAttributes(*c, *id, o.path, out);
    auto value = c->GetAttribute(*id, *o.name);
    if (!value) return AddContext(value.error(), o.path);
    out << value->ToText() << '\n';
    return Status::OK();
  }

  std::optional<Attribute> attr;
  if (o.value) {
    SLABFS_ASSIGN_OR_RETURN(attr, MakeAttribute(*o.value, o.force_string, o.dtype));
  }
  SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(o.file, "attr"));
  Container& c = session.container();
  auto id = c.Resolve(o.path);
  if (!id) return AddContext(id.error(), o.path);
  const std::string& context = o.path;
  if (attr) {
    SLABFS_RETURN_IF_ERROR(AddContext(c.SetAttribute(*id, *o.name, *attr), context));
  } else {
    SLABFS_RETURN_IF_ERROR(AddContext(c.DeleteAttribute(*id, *o.name), context));
  }
  return AddContext(session.Finish(), o.file);
}

void AddAttrCommand(CLI::App& app, CommandTable& table) {
  auto o = std::make_shared<AttrOptions>();
  // CLI11 2.1 has no std::optional binding: the strings land here and the
  // option counts say which were given.
  auto name = std::make_shared<std::string>();
  auto value = std::make_shared<std::string>();
  CLI::App* sub =
      app.add_subcommand("attr",
                         "List attributes (FILE PATH), print one (FILE PATH NAME), set one (FILE PATH NAME VALUE) "
                         "or delete one (FILE PATH NAME --delete)");
  sub->add_option("FILE", o->file, "container file (or an HDF5 / netCDF-4 file, to list and print)")->required();
  sub->add_option("PATH", o->path, "absolute path of a group or dataset")->required();
  CLI::Option* name_opt = sub->add_option("NAME", *name, "attribute name");
  CLI::Option* value_opt =
      sub->add_option("VALUE", *value,
                      "new value: integers (1 or 1,2,3) are stored as i8, other numbers as f8, anything else "
                      "as a string; put -- before a VALUE that starts with '-' and is not a number");
  CLI::Option* delete_opt = sub->add_flag("-d,--delete", o->remove, "delete the attribute NAME");
  CLI::Option* string_opt = sub->add_flag("-s,--string", o->force_string, "store VALUE as a string, even if numeric");
  CLI::Option* dtype_opt =
      sub->add_option("--dtype", o->dtype, "store VALUE (comma-separated numbers) as this element type");
  delete_opt->needs(name_opt)->excludes(value_opt);
  string_opt->needs(value_opt)->excludes(dtype_opt);
  dtype_opt->needs(value_opt);
  table.Add(sub, [o, name, value, name_opt, value_opt](std::ostream& out) {
    AttrOptions options = *o;
    if (name_opt->count() > 0) options.name = *name;
    if (value_opt->count() > 0) options.value = *value;
    return RunAttr(options, out);
  });
}

}  // namespace slabfs::tools
