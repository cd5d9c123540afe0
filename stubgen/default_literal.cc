// Schema default values as C++ literals, exact to the bit, or the reason one is refused.
#include "stubgen/model_parts.h"

#include <cmath>
#include <cstdio>

#include <capnp/dynamic.h>

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {
namespace {

// A C++ string literal of `text`, every byte outside printable ASCII escaped.
std::string cppStringLiteral(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?': no trigraphs
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    }
  }
  return out + "\"";
}

// An exact C++ literal of a floating-point scalar (hex float), or the numeric_limits expression.
std::string floatLiteral(double v, const Scalar& s) {
  const std::string type = s.cppType;
  if (std::isnan(v)) return "std::numeric_limits<" + type + ">::quiet_NaN()";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + type + ">::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string(buf) + s.suffix;
}

// A scalar's C++ literal, suffixed so that it has the scalar's type. Defaults and List elements
// both come as capnp's dynamic values, so one formatter serves every scalar kind.
bool scalarLiteral(const Scalar& s, capnp::DynamicValue::Reader v, std::string& out, std::string& refused) {
  switch (v.getType()) {
    case capnp::DynamicValue::BOOL: out = v.as<bool>() ? "true" : "false"; return true;
    case capnp::DynamicValue::INT: {
      const int64_t n = v.as<int64_t>();
      out = n == INT64_MIN ? "(-9223372036854775807LL - 1)" : std::to_string(n) + s.suffix;
      return true;
    }
    case capnp::DynamicValue::UINT: out = std::to_string(v.as<uint64_t>()) + s.suffix; return true;
    case capnp::DynamicValue::FLOAT: out = floatLiteral(v.as<double>(), s); return true;
    default: refused = "of this kind"; return false;
  }
}

// The C++ expression of one element of a List literal of element type `t`.
bool listElementLiteral(const ::lrpc::stubgen::Type& t, capnp::DynamicValue::Reader e, std::string& out,
                        std::string& refused) {
  if (const Scalar* s = scalarOf(t.kind)) return scalarLiteral(*s, e, out, refused);
  switch (e.getType()) {
    case capnp::DynamicValue::TEXT: {
      auto text = e.as<capnp::Text>();
      out = cppStringLiteral(std::string_view(text.cStr(), text.size()));
      return true;
    }
    case capnp::DynamicValue::DATA: {
      auto data = e.as<capnp::Data>();
      out = "std::vector<uint8_t>{";
      for (size_t i = 0; i < data.size(); ++i) out += (i ? ", " : "") + std::to_string(data[i]) + "u";
      out += "}";
      return true;
    }
    case capnp::DynamicValue::ENUM: {
      auto en = e.as<capnp::DynamicEnum>().getEnumerant();
      KJ_IF_MAYBE(known, en) {
        out = t.cppName + "::k" + pascal(known->getProto().getName().cStr());
        return true;
      }
      refused = "numbers outside their enum";
      return false;
    }
    case capnp::DynamicValue::LIST: {
      const ::lrpc::stubgen::Type& inner = *t.elemType;
      out = memberType(t) + "{";
      bool first = true;
      for (auto item : e.as<capnp::DynamicList>()) {
        std::string lit;
        if (!listElementLiteral(inner, item, lit, refused)) return false;
        out += (first ? "" : ", ") + lit;
        first = false;
      }
      out += "}";
      return true;
    }
    default:
      refused = "struct literals";
      return false;
  }
}

}  // namespace

// The C++ expression of a schema default of type `t`. Numbers, Bool, enums and Text become
// literals; for struct fields also Data and List literals (a std::vector initializer); struct
// literals, and Data and List literals on parameters (a default argument would need storage of
// its own for the view), are refused, named in `refused`.
bool ModelBuilder::defaultLiteral(const ::lrpc::stubgen::Type& t, CType::Reader type, schema::Value::Reader v,
                                  bool member, std::string& out, std::string& refused) const {
  if (const Scalar* s = scalarOf(t.kind)) {
    const capnp::DynamicStruct::Reader value = capnp::toDynamic(v);
    KJ_IF_MAYBE(which, value.which()) {
      return scalarLiteral(*s, value.get(*which), out, refused);
    }
  }
  switch (v.which()) {
    case schema::Value::ENUM: {
      auto enumerants = node(t.id).getProto().getEnum().getEnumerants();
      if (v.getEnum() >= enumerants.size()) {
        refused = "numbers outside their enum";
        return false;
      }
      out = t.cppName + "::k" + pascal(enumerants[v.getEnum()].getName().cStr());
      return true;
    }
    case schema::Value::TEXT:
      out = cppStringLiteral(std::string_view(v.getText().cStr(), v.getText().size()));
      return true;
    case schema::Value::DATA: {
      if (!member) {
        refused = "Data literals on parameters";
        return false;
      }
      auto data = v.getData();
      out = "std::vector<uint8_t>{";
      for (size_t i = 0; i < data.size(); ++i) out += (i ? ", " : "") + std::to_string(data[i]) + "u";
      out += "}";
      return true;
    }
    case schema::Value::LIST: {
      if (!member) {
        refused = "List literals on parameters";
        return false;
      }
      if (t.kind != Kind::kList || !t.elemType) {
        refused = "List literals of this type";
        return false;
      }
      auto list = v.getList().getAs<capnp::DynamicList>(loader_.getType(type).asList());
      out = memberType(t) + "{";
      bool first = true;
      for (auto item : list) {
        std::string lit;
        if (!listElementLiteral(*t.elemType, item, lit, refused)) return false;
        out += (first ? "" : ", ") + lit;
        first = false;
      }
      out += "}";
      return true;
    }
    case schema::Value::STRUCT: refused = "struct literals"; return false;
    default: refused = "of this kind"; return false;
  }
}
}  // namespace lrpc::stubgen
