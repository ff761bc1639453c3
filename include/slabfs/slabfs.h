// Everything a user of slabfs includes.
#ifndef SLABFS_SLABFS_H_
#define SLABFS_SLABFS_H_

#include "slabfs/container.h"
#include "slabfs/status.h"
#include "slabfs/store.h"
#include "slabfs/store_writer.h"
#include "slabfs/types.h"

#endif  // SLABFS_SLABFS_H_
