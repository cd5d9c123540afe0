// The calculator's server objects (calculator.capnp): the calculator itself, the Values it
// returns, the operators and the functions defined from an expression. Handlers run on several
// server threads at once; every object here is immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "calculator.lrpc.h"

namespace calc {

// Evaluates `e`, with `params` standing for the parameters of the function being called.
inline lrpc::Result<double> evaluate(const Calculator::Expression& e, std::span<const double> params) {
  switch (e.which()) {
    case Calculator::Expression::Which::kLiteral:
      return e.getLiteral();
    case Calculator::Expression::Which::kPreviousResult:
      return Calculator::Value::Client(e.getPreviousResult()).read();
    case Calculator::Expression::Which::kParameter:
      if (e.getParameter() >= params.size()) {
        return lrpc::Status(lrpc::Errc::kApplication, "parameter " + std::to_string(e.getParameter()) + " out of range");
      }
      return params[e.getParameter()];
    case Calculator::Expression::Which::kCall: {
      const auto& call = e.getCall();
      std::vector<double> args;
      for (const auto& p : call.params) {
        lrpc::Result<double> v = evaluate(p, params);
        if (!v.isOk()) return v;
        args.push_back(*v);
      }
      return Calculator::Function::Client(call.function).call(args);
    }
  }
  return lrpc::Status(lrpc::Errc::kApplication, "unknown expression");
}

class ValueImpl final : public Calculator::Value::Server {
 public:
  explicit ValueImpl(double value) : value_(value) {}
  lrpc::Result<double> read() override { return value_; }

 private:
  const double value_;
};

class OperatorImpl final : public Calculator::Function::Server {
 public:
  explicit OperatorImpl(Calculator::Operator op) : op_(op) {}
  lrpc::Result<double> call(std::span<const double> p) override {
    if (p.size() != 2) return lrpc::Status(lrpc::Errc::kApplication, "an operator takes two parameters");
    switch (op_) {
      case Calculator::Operator::kAdd: return p[0] + p[1];
      case Calculator::Operator::kSubtract: return p[0] - p[1];
      case Calculator::Operator::kMultiply: return p[0] * p[1];
      case Calculator::Operator::kDivide: return p[0] / p[1];
    }
    return lrpc::Status(lrpc::Errc::kApplication, "unknown operator");
  }

 private:
  const Calculator::Operator op_;
};

class FunctionImpl final : public Calculator::Function::Server {
 public:
  FunctionImpl(int32_t paramCount, Calculator::Expression body) : paramCount_(paramCount), body_(std::move(body)) {}
  lrpc::Result<double> call(std::span<const double> p) override {
    if (p.size() != static_cast<size_t>(paramCount_)) {
      return lrpc::Status(lrpc::Errc::kApplication, "expected " + std::to_string(paramCount_) + " parameters");
    }
    return evaluate(body_, p);
  }

 private:
  const int32_t paramCount_;
  const Calculator::Expression body_;  // its Functions and Values are held as long as it is
};

class CalculatorImpl final : public Calculator::Server {
 public:
  lrpc::Result<Calculator::Value::Client> evaluate(const Calculator::Expression& e) override {
    lrpc::Result<double> v = calc::evaluate(e, {});
    if (!v.isOk()) return v.status();
    return Calculator::Value::Client::serve(std::make_shared<ValueImpl>(*v));
  }
  lrpc::Result<Calculator::Function::Client> defFunction(int32_t paramCount, const Calculator::Expression& body) override {
    if (paramCount < 0) return lrpc::Status(lrpc::Errc::kInvalidArgument, "negative parameter count");
    return Calculator::Function::Client::serve(std::make_shared<FunctionImpl>(paramCount, body));
  }
  lrpc::Result<Calculator::Function::Client> getOperator(Calculator::Operator op) override {
    return Calculator::Function::Client::serve(std::make_shared<OperatorImpl>(op));
  }
};

}  // namespace calc
