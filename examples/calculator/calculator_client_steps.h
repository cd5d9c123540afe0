// What calculator_client does, step by step, so that tests run the same steps: each evaluates
// something with the server's objects and checks the number that comes back.
#pragma once

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "calculator.lrpc.h"

namespace calc {

using Expr = Calculator::Expression;

inline Expr literal(double v) {
  Expr e;
  e.setLiteral(v);
  return e;
}
inline Expr parameter(uint32_t i) {
  Expr e;
  e.setParameter(i);
  return e;
}
inline Expr previous(const Calculator::Value::Client& v) {
  Expr e;
  e.setPreviousResult(v);
  return e;
}
inline Expr call(const Calculator::Function::Client& f, std::vector<Expr> params) {
  Expr e;
  auto& c = e.initCall();
  c.function = f;
  c.params = std::move(params);
  return e;
}

// A function the client serves itself, for the callback step.
class PowImpl final : public Calculator::Function::Server {
 public:
  lrpc::Result<double> call(std::span<const double> p) override {
    if (p.size() != 2) return lrpc::Status(lrpc::Errc::kApplication, "pow takes two parameters");
    return std::pow(p[0], p[1]);
  }
};

// Runs every step, reporting each through `say`; true when all gave the right number.
inline bool runSteps(Calculator::Client& calculator, const std::function<void(const std::string&)>& say) {
  bool ok = true;
  auto check = [&](const std::string& what, const lrpc::Result<Calculator::Value::Client>& value, double want) {
    if (!value.isOk()) {
      say(what + ": " + value.status().toString());
      ok = false;
      return;
    }
    lrpc::Result<double> got = Calculator::Value::Client(*value).read();
    const bool right = got.isOk() && *got == want;
    char number[32];
    std::snprintf(number, sizeof number, "%g", got.isOk() ? *got : 0.0);
    say(what + " = " + (got.isOk() ? std::string(number) : got.status().toString()) + (right ? "" : "  WRONG"));
    ok = ok && right;
  };

  // 1. A literal comes back as a Value object.
  check("123", calculator.evaluate(literal(123)), 123);

  // 2. The server's operators are objects too.
  auto add = calculator.getOperator(Calculator::Operator::kAdd);
  auto subtract = calculator.getOperator(Calculator::Operator::kSubtract);
  auto multiply = calculator.getOperator(Calculator::Operator::kMultiply);
  if (!add.isOk() || !subtract.isOk() || !multiply.isOk()) {
    say("getOperator: " + (add.isOk() ? subtract.isOk() ? multiply.status() : subtract.status() : add.status()).toString());
    return false;
  }
  check("123 + 45 - 67", calculator.evaluate(call(*subtract, {call(*add, {literal(123), literal(45)}), literal(67)})),
        101);

  // 3. A Value from one call used in the next: the number does not travel again.
  auto first = calculator.evaluate(call(*multiply, {literal(4), literal(6)}));
  if (!first.isOk()) {
    say("4 * 6: " + first.status().toString());
    return false;
  }
  check("(4 * 6) + 3, with 4 * 6 a previous result", calculator.evaluate(call(*add, {previous(*first), literal(3)})), 27);

  // 4. Functions defined from an expression, and one function used in another.
  auto f = calculator.defFunction(2, call(*multiply, {parameter(0), call(*add, {parameter(1), literal(1)})}));
  if (!f.isOk()) {
    say("defFunction f: " + f.status().toString());
    return false;
  }
  auto g = calculator.defFunction(1, call(*f, {parameter(0), parameter(0)}));
  if (!g.isOk()) {
    say("defFunction g: " + g.status().toString());
    return false;
  }
  check("f(x, y) = x * (y + 1): f(4, 5)", calculator.evaluate(call(*f, {literal(4), literal(5)})), 24);
  check("g(x) = f(x, x): g(3)", calculator.evaluate(call(*g, {literal(3)})), 12);

  // 5. A function the client serves itself (a callback): the server calls it back while this
  //    thread waits for evaluate(), on every path.
  auto pow = Calculator::Function::Client::serve(std::make_shared<PowImpl>());
  check("pow(2, 10) + 1, pow served by the client",
        calculator.evaluate(call(*add, {call(pow, {literal(2), literal(10)}), literal(1)})), 1025);
  return ok;
}

}  // namespace calc
