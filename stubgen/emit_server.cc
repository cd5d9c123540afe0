// An interface's Server: the handler declarations, the generated dispatch, deferred replies,
// and the forwarding classes (proxies, second-base adaptors).
#include "stubgen/emit_parts.h"

#include <algorithm>

#include "stubgen/cpp_text.h"
#include "stubgen/emit_struct.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {

void emitServerClass(const InterfaceDecl& d, std::string& out) {
  out += "// Implement this to serve " + d.name + "; export it with the runtime or the transport.\n";
  out += "// Handlers may throw: the caller gets kServerFault with the exception's what().\n";
  out += "class " + d.relName + "::Server {\n";
  out += " public:\n";
  out += "  virtual ~Server() = default;\n";
  for (const auto& m : d.methods) {
    out += '\n';  // not "\n" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string
    out += docLines(m.doc, 2);
    out += "  virtual " + handlerSignature(m) + " = 0;\n";
  }
  out += "\n  // Validates the frame of `procedure`, copies the arguments out of it (the client may still\n";
  out += "  // write it), runs the handler on `self` (a " + d.name + "::Server*), writes the results.\n";
  out += "  static ::lrpc::Status dispatch(void* self, uint32_t procedure, ::lrpc::ServerCall& call) noexcept;\n";
  out += "};\n\n";
}

namespace {

std::string dispatchFnName(const InterfaceDecl& d, const Method& m) {
  std::string scope = d.relName;
  for (size_t at; (at = scope.find("::")) != std::string::npos;) scope.erase(at, 2);
  return "dispatch" + pascal(scope) + m.framePrefix;
}

// $Lrpc.views: one argument read as a view of the private tail (rd_), every kind through
// runtime/codec_view.h, with one budget for the whole tail and maxBytes as the bytes it spent.
void emitReadView(const Method& m, const Field& f, std::string& out) {
  const std::string v = f.name + "View_";
  out += "  " + viewType(f.type) + " " + v + "{};\n";
  if (f.maxBytes) out += "  const uint64_t " + f.name + "Budget_ = rd_.budget;\n";
  out += "  if (!::lrpc::codec::get(rd_, frame_." + f.name + ", " + v + ")" +
         (f.maxBytes ? " || " + f.name + "Budget_ - rd_.budget > " + std::to_string(f.maxBytes) : std::string()) +
         ") {\n";
  out += "    if (!caps_.error.isOk()) return caps_.error;  // a capability id inside it\n";
  out += "    return ::lrpc::Status(::lrpc::Errc::kBadFrame, " +
         quoted(m.qualifiedName + ": argument " + f.schemaName +
                " is malformed: a value lies outside the tail, is misaligned, nests too deep, names bytes twice "
                "or is over its size limit") + ");\n";
  out += "  }\n";
}

void emitResultWrite(const Method& m, std::string& out);
void emitDeferredCall(const InterfaceDecl& d, const Method& m, const std::string& argText, std::string& out);

}  // namespace

void emitDispatchMethod(const InterfaceDecl& d, const Method& m, std::string& out) {
  out += "::lrpc::Status " + dispatchFnName(d, m) + "(" + d.cppName + "::Server& server_, ::lrpc::ServerCall& call_) {\n";
  std::vector<std::string> callArgs;
  bool anyVar = false;
  for (const auto& f : m.params) anyVar = anyVar || isVariable(f.type);
  const bool asViews = m.views && anyVar;
  // A deferred method's results are written by its writer (emitDeferredWriter), later.
  if (anyCoded(m.params) || (anyCoded(m.results) && !m.deferred) || asViews) {
    out += "  ::lrpc::detail::ServerCaps caps_(call_);  // capabilities inside the values\n";
  }
  if (!m.params.empty()) {
    out += "  // Copy \"E\": take the fixed part out of the (shared) frame before looking at it.\n";
    out += "  const std::span<const std::byte> args_ = call_.args();\n";
    out += "  if (args_.size() < " + std::to_string(m.argsSize) + ") {\n";
    out += "    return ::lrpc::Status(::lrpc::Errc::kBadFrame, " +
           quoted(m.qualifiedName + ": argument frame shorter than " + std::to_string(m.argsSize) + " bytes") + ");\n";
    out += "  }\n";
    out += "  " + m.frameScope + "::" + m.framePrefix + "ArgsFrame frame_;\n";
    out += "  std::memcpy(&frame_, args_.data(), sizeof frame_);\n";
    emitBoolFix("frame_", frameBoolOffsets(m.params), 2, out);
    if (anyCoded(m.params) && !asViews) {
      out += "  std::span<const std::byte> tail_ = call_.argTail();\n";
      out += "  ::lrpc::codec::TailCopy tailCopy_;  // small tails are decoded from one bulk copy\n";
      out += "  if (::lrpc::Status s_ = ::lrpc::detail::decodableArgTail(call_, tail_, tailCopy_); !s_.isOk()) return s_;\n";
    } else if (anyVar) {
      out += "  const std::span<const std::byte> tail_ = call_.argTail();\n";
    }
    if (asViews) {
      out += "  ::lrpc::ViewArena arena_;  // what the views point into, until the handler returns\n";
      out += "  if (::lrpc::Status s_ = call_.awaitArgTail(tail_.size()); !s_.isOk()) return s_;\n";
      out += "  // Copy \"E\" of the whole tail at once: the views read memory the client cannot write.\n";
      out += "  const std::span<const std::byte> own_ = call_.argTailPrivate() ? tail_ : arena_.copy(tail_);\n";
      out += "  ::lrpc::codec::Reader rd_(own_" + depthArg(m) + ", &arena_);\n";
    } else if (anyCoded(m.params)) {
      out += "  ::lrpc::codec::Reader rd_(tail_" + depthArg(m) + ");\n";
    }
    for (const auto& f : m.params) {
      if (!isVariable(f.type)) {
        callArgs.push_back(frameArg(f, out));
        continue;
      }
      if (asViews) {
        emitReadView(m, f, out);
        callArgs.push_back(f.name + "View_");
        continue;
      }
      callArgs.push_back(tailArg(f, m.qualifiedName + ": argument", out));
    }
  }
  if (m.params.empty() && m.results.empty()) out += "  static_cast<void>(call_);  // no arguments, no results\n";
  std::string argText;
  for (size_t i = 0; i < callArgs.size(); ++i) argText += (i ? ", " : "") + callArgs[i];
  if (m.deferred) {
    emitDeferredCall(d, m, argText, out);
    return;
  }
  if (m.results.empty()) {
    // The handler's Status is the call's: returned from inside the try, with nothing to keep.
    out += "  try {\n";
    out += "    return server_." + m.name + "(" + argText + ");\n";
    out += "  } catch (...) {\n";
    out += "    return ::lrpc::detail::handlerThrew(" + quoted(m.qualifiedName) + ");\n";
    out += "  }\n}\n\n";
    return;
  }
  out += "  std::optional<" + returnType(m) + "> result_;\n";
  out += "  try {\n";
  out += "    result_.emplace(server_." + m.name + "(" + argText + "));\n";
  out += "  } catch (...) {\n";
  out += "    return ::lrpc::detail::handlerThrew(" + quoted(m.qualifiedName) + ");\n";
  out += "  }\n";
  out += "  if (!result_->isOk()) return result_->status();\n";
  // Not const: a large value may be moved out (ServerCall::moveResultTail).
  out += m.results.size() == 1 ? "  auto& value_ = result_->value();\n" : "  auto& out_ = result_->value();\n";
  emitResultWrite(m, out);
  out += "  return ::lrpc::Status::ok();\n}\n\n";
}

namespace {

// The handler's results (value_ for one, out_ for several) into call_'s result memory.
void emitResultWrite(const Method& m, std::string& out) {
  const bool single = m.results.size() == 1;
  WriteSpec spec{m.qualifiedName + ": handler's result", "::lrpc::Errc::kServerFault", "call_.results()",
                 "call_.resultTail", false, "std::memcpy", true};
  spec.capId = "::lrpc::detail::capResult(call_, ";
  if (m.maxDepth != 0) spec.depth = std::to_string(m.maxDepth) + "u";
  emitWrite(m.results, m.resultsSize,
            [single](const Field& f) { return single ? std::string("value_") : "out_." + f.name; }, spec, 2, out);
}

std::string writerFnName(const InterfaceDecl& d, const Method& m) {
  return "write" + dispatchFnName(d, m).substr(std::string("dispatch").size());
}

}  // namespace

// A deferred method's results are written when its Reply is sent, by this function.
void emitDeferredWriter(const InterfaceDecl& d, const Method& m, std::string& out) {
  if (m.results.empty()) return;
  out += "::lrpc::Status " + writerFnName(d, m) + "(::lrpc::ServerCall& call_, " + replyValue(m) +
         (m.results.size() == 1 ? "& value_) {\n" : "& out_) {\n");
  if (anyCoded(m.results)) out += "  ::lrpc::detail::ServerCaps caps_(call_);  // capabilities inside the values\n";
  emitResultWrite(m, out);
  out += "  return ::lrpc::Status::ok();\n}\n\n";
}

namespace {

// The handler of a deferred method gets a Reply that owns the call from here on; what it does
// not answer or keep is answered for it (a throw with its text, a drop by ~Reply).
void emitDeferredCall(const InterfaceDecl& d, const Method& m, const std::string& argText, std::string& out) {
  out += "  ::lrpc::Result<std::unique_ptr<::lrpc::DeferredCall>> deferred_ = call_.defer();\n";
  out += "  if (!deferred_.isOk()) return deferred_.status();\n";
  out += "  " + replyType(m) + " reply_(std::move(*deferred_), " +
         (m.results.empty() ? std::string() : "&" + writerFnName(d, m) + ", ") + quoted(m.qualifiedName) + ");\n";
  out += "  try {\n";
  out += "    server_." + m.name + "(" + argText + (argText.empty() ? "" : ", ") + "std::move(reply_));\n";
  out += "  } catch (...) {\n";
  out += "    if (reply_) reply_.fail(::lrpc::detail::handlerThrew(" + quoted(m.qualifiedName) + "));\n";
  out += "  }\n";
  out += "  return ::lrpc::Status::ok();\n}\n\n";
}

// A C++ name as one identifier piece: "::calc::Calc" -> "_calc_Calc".
std::string flatName(const std::string& cppName) {
  std::string out;
  for (size_t i = 0; i < cppName.size(); ++i) {
    if (cppName[i] != ':') {
      out += cppName[i];
    } else if (i + 1 < cppName.size() && cppName[i + 1] == ':') {
      out += '_';  // one underscore per "::"
      ++i;
    }
  }
  return out;
}

}  // namespace

// The name of the generated class that forwards d's calls ("Forwarder_calc_Calc").
std::string forwarderName(const InterfaceDecl& d) { return "Forwarder" + flatName(d.cppName); }

namespace {

// `name`: a serverOf::Server whose methods (those of d that `keep` accepts) call the same
// method on a d::Client. Proxies and second-base adaptors are both this.
template <class Keep>
void emitForwardingClass(const std::string& name, const std::string& serverOf, const InterfaceDecl& d, Keep keep,
                         std::string& out) {
  out += "class " + name + " final : public " + serverOf + "::Server {\n";
  out += " public:\n";
  out += "  explicit " + name + "(" + d.cppName + "::Client target) : target_(std::move(target)) {}\n";
  for (const auto& m : d.methods) {
    if (!keep(m)) continue;
    std::string args;
    for (const auto& p : m.params) args += (args.empty() ? "" : ", ") + p.name;
    // A deferred method is answered at once with the target's answer.
    const std::string body = m.deferred ? "reply.settle(target_." + m.name + "(" + args + "));"
                                        : "return target_." + m.name + "(" + args + ");";
    out += "  " + handlerSignature(m) + " override { " + body + " }\n";
  }
  out += "\n private:\n";
  out += "  " + d.cppName + "::Client target_;\n";
  out += "};\n\n";
}

}  // namespace

// A Server that calls the same method on a Client of another binding: what a capability
// becomes when it is passed on through a binding other than the one it came on (a proxy;
// InterfaceDescriptor::forward).
void emitForwarder(const InterfaceDecl& d, std::string& out) {
  const std::string name = forwarderName(d);
  out += "// Passes every call of " + d.name + " on to a capability of another binding.\n";
  emitForwardingClass(name, d.cppName, d, [](const Method&) { return true; }, out);
  out += "std::shared_ptr<void> " + name + "Make(std::shared_ptr<::lrpc::Binding> target) {\n";
  out += "  auto f = std::make_shared<" + name + ">(" + d.cppName + "::Client(std::move(target)));\n";
  out += "  void* self = static_cast<" + d.cppName + "::Server*>(f.get());\n";
  out += "  return std::shared_ptr<void>(std::move(f), self);\n";
  out += "}\n\n";
}

namespace {

// The class that serves `base` (an interface d extends but does not open its PDL with) by
// calling the same methods on a d::Client: "Forwarder_calc_Calc_As_calc_Base".
std::string adaptorName(const InterfaceDecl& d, const InterfaceDecl::OtherBase& base) {
  return forwarderName(d) + "_As" + flatName(base.cppName);
}

}  // namespace

// Per other base: a base::Server whose every method calls d's Client (which has them all,
// further into its PDL), and d::Client's conversions to base::Client and Cap<base> through it.
void emitBaseAdaptors(const InterfaceDecl& d, std::string& out) {
  for (const auto& o : d.otherBases) {
    out += "// " + d.name + " seen as " + o.cppName + ": its calls go on to the " + d.name + " client.\n";
    emitForwardingClass(adaptorName(d, o), o.cppName, d,
                        [&o](const Method& m) { return o.scopes.count(m.frameScope) != 0; }, out);
  }
}

void emitBaseConversions(const InterfaceDecl& d, std::string& out) {
  for (const auto& o : d.otherBases) {
    out += d.relName + "::Client::operator " + o.cppName + "::Client() const {\n";
    out += "  if (binding_->remote && binding_->channel->isNullCap()) return " + o.cppName + "::Client();  // null stays null\n";
    out += "  return " + o.cppName + "::Client::serve(std::make_shared<" + adaptorName(d, o) + ">(*this));\n";
    out += "}\n\n";
    out += d.relName + "::Client::operator ::lrpc::Cap<" + o.cppName + ">() const {\n";
    out += "  return ::lrpc::Cap<" + o.cppName + ">(operator " + o.cppName + "::Client().binding());\n";
    out += "}\n\n";
  }
}

void emitServerDispatch(const InterfaceDecl& d, std::string& out) {
  out += "::lrpc::Status " + d.relName + "::Server::dispatch(void* self, uint32_t procedure, ::lrpc::ServerCall& call) noexcept {\n";
  // The unknown procedure's text is built out of line, so that this function, which every call
  // passes through, saves no registers for it.
  const std::string unknown = "::lrpc::detail::noProcedure(" + quoted(d.descriptorName) + ", procedure)";
  if (d.methods.empty()) {
    out += "  static_cast<void>(self);\n";
    out += "  static_cast<void>(call);\n";
    out += "  return " + unknown + ";\n";
    out += "}\n\n";
    return;
  }
  out += "  auto& server = *static_cast<" + d.cppName + "::Server*>(self);\n";
  out += "  try {  // the copies allocate: running out of memory is an error, not a crash\n";
  out += "    switch (procedure) {\n";
  for (const auto& m : d.methods) {
    out += "      case " + m.constName + ": return " + dispatchFnName(d, m) + "(server, call);\n";
  }
  if (d.carriesCaps) out += "      case kLrpcCapCall: return ::lrpc::detail::serveCapCall(call);\n";
  out += "      default: return " + unknown + ";\n";
  out += "    }\n";
  out += "  } catch (const std::bad_alloc&) {\n";
  out += "    return ::lrpc::Status(::lrpc::Errc::kResourceExhausted);\n";
  out += "  }\n";
  out += "}\n\n";
}

}  // namespace lrpc::stubgen
