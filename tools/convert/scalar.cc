#include "tools/convert/scalar.h"

#include <algorithm>

namespace slabfs::tools::convert {

void MakeScalarOptions(DatasetOptions* o) {
  o->shape = o->max_shape = o->chunks = {1};
  o->filters.clear();
}

Attribute ScalarMarker() { return Attribute::Integer(1); }

bool IsExportedScalar(const DatasetInfo& info, const std::vector<std::string>& attribute_names) {
  return info.shape == Dims{1} && info.max_shape == Dims{1} &&
         std::find(attribute_names.begin(), attribute_names.end(), kScalarAttribute) != attribute_names.end();
}

}  // namespace slabfs::tools::convert
