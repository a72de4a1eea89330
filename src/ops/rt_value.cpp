#include "toroid/ops/rt_value.h"

#include "toroid/support/error.h"

namespace toroid::ops {

int64_t RtValue::to_int() const {
  if (kind() == Kind::Int) return std::get<int64_t>(data_);
  if (kind() == Kind::Bool) return std::get<bool>(data_) ? 1 : 0;
  user_error("expected an int value");
}

double RtValue::to_double() const {
  if (kind() == Kind::Float) return std::get<double>(data_);
  if (kind() == Kind::Int) return static_cast<double>(std::get<int64_t>(data_));
  if (kind() == Kind::Bool) return std::get<bool>(data_) ? 1.0 : 0.0;
  user_error("expected a number");
}

bool RtValue::to_bool() const {
  if (kind() == Kind::Bool) return std::get<bool>(data_);
  if (kind() == Kind::Int && (std::get<int64_t>(data_) == 0 || std::get<int64_t>(data_) == 1))
    return std::get<int64_t>(data_) == 1;
  user_error("expected a bool value");
}

}  // namespace toroid::ops
