#include "fusefs/follower.h"

#include "fusefs/log.h"

namespace slabfs::fusefs {

Status FollowStep(Container& c, const FollowHooks& hooks) {
  auto info = c.Refresh();
  if (!info) return info.error();
  if (!info->changed) return Status::OK();
  Log().info("following {}: now at commit {} ({} objects changed, {} gone)", c.path(), info->generation,
             info->changed_objects.size(), info->removed_objects.size());
  // Names first: a lookup after this finds the new tree.
  for (const RefreshInfo::Name& n : info->dropped_names) hooks.forget_name(n.parent, n.name);
  for (ObjectId id : info->changed_objects) {
    hooks.touch(id);
    auto st = c.Stat(id);
    if (st && st->kind == ObjectKind::kDataset)
      hooks.forget_data(id);
    else
      hooks.forget_attributes(id);
  }
  for (ObjectId id : info->removed_objects) hooks.forget_attributes(id);
  return Status::OK();
}

}  // namespace slabfs::fusefs
