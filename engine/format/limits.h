// The limits of the container format, in two columns: what every writer
// allows (the API, and through it the mount, the CLI and Python) and what
// the loader accepts. Each writer limit lies inside the loader's, so that
// no sequence of accepted operations makes a container that does not open;
// the static_asserts below are that rule, checked by the build. The loader's
// room beyond the writer's also opens containers that older versions let
// grow past a writer limit (docs/reliability.md, "Limits enforced at write
// time").
#ifndef SLABFS_ENGINE_FORMAT_LIMITS_H_
#define SLABFS_ENGINE_FORMAT_LIMITS_H_

#include <cstddef>
#include <cstdint>

#include "engine/format/layout.h"
#include "slabfs/types.h"

namespace slabfs::engine {

// Levels below the root: the root's children are at depth 1.
constexpr int kMaxDepth = 512;
constexpr int kLoadMaxDepth = 1024;
// Children of one group.
constexpr size_t kMaxChildrenPerGroup = 100000;
constexpr uint32_t kLoadMaxChildren = 1u << 24;
// Attributes of one object: their count, and their names and values together.
constexpr size_t kMaxAttributesPerObject = 65536;
constexpr size_t kMaxAttributeBytesPerObject = 1 << 20;
// Every attribute the byte budget allows, even with one-byte names and
// empty values.
constexpr uint32_t kLoadMaxAttributes = 1u << 20;

static_assert(kMaxDepth < kLoadMaxDepth);
static_assert(kMaxChildrenPerGroup <= kLoadMaxChildren);
static_assert(kMaxAttributesPerObject <= kLoadMaxAttributes);
static_assert(kMaxAttributeBytesPerObject <= kLoadMaxAttributes);
// A group's block holds every child record (a name of at most
// kMaxNameBytes and at most 64 bytes beside it) and every attribute (with
// at most 16 bytes of framing each), well inside kMaxBlockBytes.
static_assert(kMaxChildrenPerGroup * (kMaxNameBytes + 64) + kMaxAttributeBytesPerObject + kMaxAttributesPerObject * 16 +
                  4096 <
              kMaxBlockBytes);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_LIMITS_H_
