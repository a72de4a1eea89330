// Summaries of output values: dtype, shape, min/max/mean over the finite elements, counts of
// nan and inf, and the first few values.
#include "summary.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "toroid/ops/ref_util.h"

namespace toroidc {

using toroid::ops::HostTensor;
using toroid::ops::RtValue;

namespace {

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_num(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

struct Stats {
  int64_t numel = 0, nan = 0, inf = 0, finite = 0;
  double min = 0, max = 0, mean = 0;
  std::vector<double> first;
};

Stats stats_of(const HostTensor& t) {
  Stats s;
  s.numel = t.numel();
  double sum = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  for (int64_t i = 0; i < s.numel; ++i) {
    // Integers read exactly through get_int (i64 beyond 2^53 would round through double).
    double v = toroid::is_floating(t.dtype()) ? t.get_double(i) : static_cast<double>(t.get_int(i));
    if (static_cast<int64_t>(s.first.size()) < 6) s.first.push_back(v);
    if (std::isnan(v)) { ++s.nan; continue; }
    if (std::isinf(v)) { ++s.inf; continue; }
    ++s.finite;
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean = s.finite ? sum / static_cast<double>(s.finite) : 0;
  return s;
}

std::string type_of(const HostTensor& t) {
  return std::string(toroid::dtype_short_name(t.dtype())) + toroid::ops::shape_str(t.sizes());
}

std::string scalar_text(const RtValue& v) {
  switch (v.kind()) {
    case RtValue::Kind::Int: return std::to_string(v.to_int());
    case RtValue::Kind::Bool: return v.to_bool() ? "true" : "false";
    case RtValue::Kind::Float: return num(v.to_double());
    default: return "None";
  }
}

}  // namespace

std::string summary_line(const OutputInfo& o, const RtValue& v) {
  std::string head = o.name + (o.value.empty() ? "" : " " + o.value);
  if (!v.is_tensor()) {
    const char* kind = v.kind() == RtValue::Kind::Int ? "int" : v.kind() == RtValue::Kind::Float ? "float"
                       : v.kind() == RtValue::Kind::Bool ? "bool" : "none";
    return head + " " + kind + " " + scalar_text(v);
  }
  const HostTensor& t = v.tensor();
  Stats s = stats_of(t);
  std::string line = head + " " + type_of(t);
  if (s.numel == 0) return line + " (empty)";
  if (s.finite) line += " min=" + num(s.min) + " max=" + num(s.max) + " mean=" + num(s.mean);
  if (s.nan) line += " nan=" + std::to_string(s.nan);
  if (s.inf) line += " inf=" + std::to_string(s.inf);
  line += " first=[";
  for (size_t i = 0; i < s.first.size(); ++i) line += (i ? ", " : "") + num(s.first[i]);
  return line + (s.numel > static_cast<int64_t>(s.first.size()) ? ", ...]" : "]");
}

std::string summary_json(const OutputInfo& o, const RtValue& v) {
  std::string j = "{\"name\": " + json_str(o.name) + ", \"value\": " + json_str(o.value);
  if (!o.file.empty()) j += ", \"file\": " + json_str(o.file);
  if (!v.is_tensor()) {
    const char* kind = v.kind() == RtValue::Kind::Int ? "int" : v.kind() == RtValue::Kind::Float ? "float"
                       : v.kind() == RtValue::Kind::Bool ? "bool" : "none";
    j += ", \"kind\": \"" + std::string(kind) + "\"";
    if (v.kind() == RtValue::Kind::Float) j += ", \"scalar\": " + json_num(v.to_double());
    else if (v.is_number()) j += ", \"scalar\": " + scalar_text(v);
    return j + "}";
  }
  const HostTensor& t = v.tensor();
  Stats s = stats_of(t);
  j += ", \"kind\": \"tensor\", \"dtype\": \"" + std::string(toroid::dtype_short_name(t.dtype())) + "\", \"shape\": [";
  for (size_t i = 0; i < t.sizes().size(); ++i) j += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  j += "], \"strides\": [";
  for (size_t i = 0; i < t.strides().size(); ++i) j += (i ? ", " : "") + std::to_string(t.strides()[i]);
  j += "], \"numel\": " + std::to_string(s.numel) + ", \"nan\": " + std::to_string(s.nan) +
       ", \"inf\": " + std::to_string(s.inf);
  if (s.finite) j += ", \"min\": " + json_num(s.min) + ", \"max\": " + json_num(s.max) + ", \"mean\": " + json_num(s.mean);
  j += ", \"first\": [";
  for (size_t i = 0; i < s.first.size(); ++i) j += (i ? ", " : "") + json_num(s.first[i]);
  return j + "]}";
}

}  // namespace toroidc
