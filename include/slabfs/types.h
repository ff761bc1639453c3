// The value types of the slabfs data model, one header each: element types,
// shapes, selections, dataset options and descriptions, stored chunks,
// attributes, objects, open options, refresh results, cache and space
// figures. Include the one you need; this header includes them all.
#ifndef SLABFS_TYPES_H_
#define SLABFS_TYPES_H_

#include "slabfs/attribute.h"
#include "slabfs/cache_stats.h"
#include "slabfs/dataset_info.h"
#include "slabfs/dataset_options.h"
#include "slabfs/dims.h"
#include "slabfs/dtype.h"
#include "slabfs/object.h"
#include "slabfs/open_options.h"
#include "slabfs/refresh_info.h"
#include "slabfs/selection.h"
#include "slabfs/space_info.h"
#include "slabfs/stored_chunk.h"

#endif  // SLABFS_TYPES_H_
