#include "fusefs/attr_types.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace slabfs::fusefs {
namespace {

// Waiting types beyond this many are dropped oldest first.
constexpr size_t kMaxWaiting = 4096;

std::string_view Trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string FormatAttrType(const Attribute& a) {
  if (a.kind != Attribute::Kind::kNumeric) return {};
  const uint64_t n = a.count();
  if (n == 1) return std::string(DTypeName(a.dtype));
  return fmt::format("{}[{}]", DTypeName(a.dtype), n);
}

Result<AttrType> ParseAttrType(std::string_view text) {
  const std::string_view s = Trim(text);
  auto bad = [&](std::string_view why) {
    return Err(Status::InvalidArgument(
        fmt::format("user.slab.type '{}': {} (a dtype such as f8 or i2, and [N] for N elements)", s, why)));
  };
  std::string_view name = s;
  AttrType t;
  if (const size_t open = s.find('['); open != std::string_view::npos) {
    if (s.back() != ']') return bad("no closing ]");
    name = Trim(s.substr(0, open));
    const std::string_view digits = Trim(s.substr(open + 1, s.size() - open - 2));
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || n == 0) {
      return bad("the length is not a positive number");
    }
    t.count = n;
  }
  auto dtype = ParseDType(name);
  if (!dtype) return bad(dtype.error().message());
  t.dtype = *dtype;
  return t;
}

Result<Attribute> ParseTypedValue(const AttrType& t, std::string_view text) {
  std::string_view rest = Trim(text);
  if (rest.empty()) return Err(Status::InvalidArgument(fmt::format("an empty value is not {}", DTypeName(t.dtype))));
  std::string raw;
  uint64_t n = 0;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = Trim(rest.substr(0, comma));
    auto one = EncodeScalar(t.dtype, item);
    if (!one) {
      return Err(Status::InvalidArgument(
          fmt::format("'{}' is not a value of {}: {}", item, DTypeName(t.dtype), one.error().message())));
    }
    raw += *one;
    ++n;
    if (raw.size() > kMaxAttributeBytes) {
      return Err(Status::InvalidArgument(fmt::format("more than {} bytes", kMaxAttributeBytes)));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (t.count && *t.count != n) {
    return Err(
        Status::InvalidArgument(fmt::format("{} values where the type says {}[{}]", n, DTypeName(t.dtype), *t.count)));
  }
  return Attribute::Numbers(t.dtype, std::move(raw));
}

std::optional<Attribute> ReadAsKnownType(DType t, std::string_view text) {
  auto a = ParseTypedValue(AttrType{t, std::nullopt}, text);
  if (!a) return std::nullopt;
  if (t == DType::kF4) {
    // Each number as f8 reads it: an f4 must hold the same value.
    auto wide = ParseTypedValue(AttrType{DType::kF8, std::nullopt}, text);
    if (!wide) return std::nullopt;
    for (uint64_t i = 0; i < a->count(); ++i) {
      float f;
      double d;
      std::memcpy(&f, a->data.data() + i * sizeof f, sizeof f);
      std::memcpy(&d, wide->data.data() + i * sizeof d, sizeof d);
      if (!(static_cast<double>(f) == d || (std::isnan(f) && std::isnan(d)))) return std::nullopt;
    }
  }
  return std::move(*a);
}

void AttrTypeKeeper::PruneLocked(Clock::time_point now) {
  std::erase_if(waiting_, [&](const auto& kv) { return now - kv.second.when > window_; });
  while (waiting_.size() > kMaxWaiting) {
    auto oldest = std::min_element(waiting_.begin(), waiting_.end(),
                                   [](const auto& a, const auto& b) { return a.second.when < b.second.when; });
    waiting_.erase(oldest);
  }
}

void AttrTypeKeeper::Wait(ObjectId id, std::string_view name, AttrType t) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  waiting_[{id, std::string(name)}] = Waiting{now, t};
  if (waiting_.size() > kMaxWaiting / 2) PruneLocked(now);
}

std::optional<AttrType> AttrTypeKeeper::Take(ObjectId id, std::string_view name) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  if (waiting_.empty()) return std::nullopt;
  auto it = waiting_.find({id, std::string(name)});
  if (it == waiting_.end()) return std::nullopt;
  std::optional<AttrType> t;
  if (now - it->second.when <= window_) t = it->second.type;
  waiting_.erase(it);
  return t;
}

bool AttrTypeKeeper::Drop(ObjectId id, std::string_view name) { return Take(id, name).has_value(); }

void AttrTypeKeeper::Forget(ObjectId id) {
  std::lock_guard lock(mu_);
  auto it = waiting_.lower_bound({id, std::string()});
  while (it != waiting_.end() && it->first.first == id) it = waiting_.erase(it);
}

}  // namespace slabfs::fusefs
