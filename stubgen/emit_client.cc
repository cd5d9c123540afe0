// An interface's Client: its methods, their copy halves (In_, Out_) and the async() form.
#include "stubgen/emit_parts.h"

#include <algorithm>

#include "stubgen/cpp_text.h"
#include "stubgen/emit_struct.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {
namespace {

// Client::Async, what client.async() returns: each method starts its call and returns an
// lrpc::Pending of what the synchronous method returns (runtime/pending.h).
void emitClientAsync(const InterfaceDecl& d, std::string& out, std::string& defs) {
  out += "\n  // Starts calls without waiting for them (runtime/pending.h): each method copies its\n";
  out += "  // arguments, starts the call and returns an lrpc::Pending of what the synchronous one\n";
  out += "  // returns. With a queue, co_await and then() complete through queue.poll().\n";
  out += "  class Async {\n";
  out += "   public:\n";
  for (const auto& m : d.methods) {
    const std::string caps = usesCaps(m) ? ", caps_" : "";
    const std::string unused = usesCaps(m) ? "" : " (void)caps_;";
    const std::string head = "::lrpc::Pending<" + returnType(m) + "> ";
    std::string params = "(";  // not "(" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string
    params += paramList(m, true) + ") const";
    std::string defParams = "(";  // the same without default arguments
    defParams += paramList(m) + ") const";
    std::string body;
    body += "  return ::lrpc::detail::startAsync<" + returnType(m) + ">(\n";
    body += "      binding_, " + d.cppName + "::" + m.constName + ", options_, queue_,\n";
    body += "      [&](auto& call_, ::lrpc::detail::ClientCaps& caps_) {" + unused + " return " + m.name + "In_(call_" +
            caps + argNames(m) + "); },\n";
    body += "      [](auto& call_, ::lrpc::detail::ClientCaps& caps_) {" + unused + " return " + m.name + "Out_(call_" +
            caps + "); });\n";
    out += "    " + head + m.name + params + ";\n";
    defs += head + d.relName + "::Client::Async::" + m.name + defParams + " {\n" + body + "}\n\n";
  }
  out += "\n   private:\n";
  out += "    friend class Client;\n";
  out += "    Async(std::shared_ptr<::lrpc::Binding> binding, const ::lrpc::CallOptions& options,\n";
  out += "          std::shared_ptr<::lrpc::detail::CompletionState> queue)\n";
  out += "        : binding_(std::move(binding)), options_(options), queue_(std::move(queue)) {}\n";
  out += "    std::shared_ptr<::lrpc::Binding> binding_;\n";
  out += "    ::lrpc::CallOptions options_;\n";
  out += "    std::shared_ptr<::lrpc::detail::CompletionState> queue_;\n";
  out += "  };\n";
  out += "  // Calls that the caller completes (wait(), ready(), or co_await in place).\n";
  out += "  Async async() const { return Async(binding_, options_, nullptr); }\n";
  out += "  // Calls that `queue` completes too: co_await resumes, and then() runs, from queue.poll().\n";
  out += "  Async async(::lrpc::Completions& queue) const { return Async(binding_, options_, queue.state()); }\n";
}

// A method whose arguments and results are all fixed-size, with no capability: on the same
// host it is tried as a PlainCall first (runtime/plain_call.h).
bool isPlain(const Method& m) { return !m.variable && !usesCaps(m); }

// A client method's body: the test of the remote bit first, then `ret` (a return statement
// over call_) on the path it picks.
std::string onEitherPath(const InterfaceDecl& d, const Method& m, const std::string& ret) {
  const std::string aim = "(*binding_, " + d.cppName + "::" + m.constName + ", options_)";
  std::string body = "  if (binding_->remote) [[unlikely]] {\n";
  body += "    ::lrpc::RemoteCall call_";
  body += aim;
  body += ";\n    ";
  body += ret;
  body += "\n  }\n";
  if (isPlain(m)) {
    body += "  if (::lrpc::PlainCall call_";
    body += aim;
    body += "; call_.ready()) [[likely]] {\n    ";
    body += ret;
    body += "\n  }\n";
  }
  body += "  ::lrpc::LocalCall call_";
  body += aim;
  body += ";\n  ";
  body += ret;
  body += "\n";
  return body;
}

}  // namespace

// `defs` collects the methods' definitions, for the source file.
void emitClientClass(const InterfaceDecl& d, std::string& out, std::string& defs) {
  out += "// Calls " + d.name + " through a binding, same host or remote. Copies share the binding.\n";
  out += "class " + d.relName + "::Client {\n";
  out += " public:\n";
  out += "  // An unbound client: every call fails with kBindingRejected.\n";
  out += "  Client();\n";
  out += "  // Calls go through `binding`, which must have been made for " + d.name + "::kDescriptor;\n";
  out += "  // a null or different binding makes every call fail with kBindingRejected.\n";
  out += "  explicit Client(std::shared_ptr<::lrpc::Binding> binding, const ::lrpc::CallOptions& options = {});\n\n";
  out += "  // The capability a struct field or List element holds (runtime/codec.h, Cap).\n";
  out += "  Client(const ::lrpc::Cap<" + d.cppName + ">& cap) : Client(cap.binding()) {}  // NOLINT: implicit\n";
  out += "  operator ::lrpc::Cap<" + d.cppName + ">() const { return ::lrpc::Cap<" + d.cppName +
         ">(binding_); }  // NOLINT: implicit\n";
  out += "  // The same binding with other per-call options (e.g. a deadline).\n";
  out += "  Client withOptions(const ::lrpc::CallOptions& options) const { return Client(binding_, options); }\n";
  out += "  // A client whose calls run `impl` in this process; as a capability in a frame it hands `impl`\n";
  out += "  // to the peer, which calls it through the same binding (runtime/capability.h).\n";
  out += "  static Client serve(std::shared_ptr<Server> impl);\n";
  out += "  // The binding calls use (a rejecting stand-in when the client is unbound).\n";
  out += "  const std::shared_ptr<::lrpc::Binding>& binding() const noexcept { return binding_; }\n";
  if (!d.prefixBases.empty()) {
    out += "  // A " + d.name + " is each interface it extends first (kPrefixBases): their methods open\n";
    out += "  // its PDL, so their clients call it through the same binding.\n";
  }
  for (const auto& [id, base] : d.prefixBases) {
    out += "  operator " + base + "::Client() const { return " + base + "::Client(binding_, options_); }  // NOLINT: implicit\n";
    out += "  operator ::lrpc::Cap<" + base + ">() const { return ::lrpc::Cap<" + base +
           ">(binding_); }  // NOLINT: implicit\n";
  }
  if (!d.otherBases.empty()) {
    out += "  // Every other interface it extends: their methods sit further into its PDL, so their\n";
    out += "  // clients call it through an adaptor served in this process, one per conversion.\n";
  }
  for (const auto& o : d.otherBases) {
    out += "  operator " + o.cppName + "::Client() const;  // NOLINT: implicit\n";
    out += "  operator ::lrpc::Cap<" + o.cppName + ">() const;  // NOLINT: implicit\n";
  }
  for (const auto& m : d.methods) {
    out += '\n';  // not "\n" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string
    out += docLines(m.doc, 2);
    if (m.stream) {
      out += "  // -> stream: no results. Each call returns after the server has run it, so calls made\n";
      out += "  // one after another arrive in order; async() overlaps them without keeping the order.\n";
    }
    std::string params = "(";  // not "(" + ...: the same false -Wrestrict
    params += paramList(m, true) + ") const";
    std::string defParams = "(";  // the same without default arguments
    defParams += paramList(m) + ") const";
    out += "  " + returnType(m) + " " + m.name + params + ";\n";
    defs += returnType(m) + " " + d.relName + "::Client::" + m.name + defParams + " {\n" +
            onEitherPath(d, m, "return " + m.name + "Via(call_" + argNames(m) + ");") + "}\n\n";
    if (std::any_of(m.results.begin(), m.results.end(), [](const Field& f) { return isVariable(f.type); })) {
      const std::string ps = paramList(m);
      out += "  // The same call, its results written into into_'s target, reusing its storage (lrpc::Into).\n";
      const std::string intoParams =
          "(" + ps + (ps.empty() ? "" : ", ") + "::lrpc::Into<" + replyValue(m) + "> into_) const";
      out += "  ::lrpc::Status " + m.name + intoParams + ";\n";
      defs += "::lrpc::Status " + d.relName + "::Client::" + m.name + intoParams + " {\n" +
              onEitherPath(d, m, "return " + m.name + "To_(call_" + argNames(m) + ", into_.target());") + "}\n\n";
    }
  }
  emitClientAsync(d, out, defs);
  out += "\n private:\n";
  out += "  // The copy code of each method, the same for both paths (Call: lrpc::LocalCall or lrpc::RemoteCall).\n";
  for (const auto& m : d.methods) {
    std::string ps = paramList(m);
    out += "  template <::lrpc::Call C>\n";
    out += "  static ::lrpc::Status " + m.name + "In_(" + halfParams(m, true) + ");\n";
    if (!m.results.empty()) {
      out += "  template <::lrpc::Call C>\n";
      out += "  static ::lrpc::Status " + m.name + "Read_(" + halfParams(m, false) + ", " + replyValue(m) + "& out_);\n";
    }
    out += "  template <::lrpc::Call C>\n";
    out += "  static " + returnType(m) + " " + m.name + "Out_(" + halfParams(m, false) + ");\n";
    if (!m.results.empty()) {
      out += "  template <::lrpc::Call C>\n";
      out += "  static ::lrpc::Status " + m.name + "To_(C& call_" + (ps.empty() ? "" : ", " + ps) + ", " +
             replyValue(m) + "& out_);\n";
    }
    out += "  template <::lrpc::Call C>\n";
    out += "  static " + returnType(m) + " " + m.name + "Via(C& call_" + (ps.empty() ? "" : ", " + ps) + ");\n";
  }
  out += "\n  std::shared_ptr<::lrpc::Binding> binding_;  // never null\n";
  out += "  ::lrpc::CallOptions options_;\n";
  out += "};\n\n";
}

namespace {

// The result whose tail may arrive apart (RemoteCall::resultTailApart): a Data value that is
// the method's only variable-size result, so that the reply's tail is that value.
const Field* apartResult(const Method& m) {
  const auto isVar = [](const Field& f) { return isVariable(f.type); };
  const auto var = std::find_if(m.results.begin(), m.results.end(), isVar);
  if (var == m.results.end() || !isBytes(var->type)) return nullptr;
  return std::count_if(m.results.begin(), m.results.end(), isVar) == 1 ? &*var : nullptr;
}

}  // namespace

bool usesCaps(const Method& m) {
  return anyCoded(m.params) || anyCoded(m.results) || anyInterface(m.params) || anyInterface(m.results);
}

// The parameter list of a method's copy halves: the call, its capabilities when it carries
// any, then the method's own parameters (In_ only).
std::string halfParams(const Method& m, bool in) {
  std::string s = "C& call_";
  if (usesCaps(m)) s += ", ::lrpc::detail::ClientCaps& caps_";
  std::string ps = paramList(m);
  if (in && !ps.empty()) s += ", " + ps;
  return s;
}

// A method's client copy code in two halves, In_ (arguments into the frame) and Out_ (results
// out of it), and Via, the synchronous call that runs In_, invoke() and Out_ in a row. An async
// call runs the same halves before it starts and once it has completed (runtime/async_call.h).
void emitClientVia(const InterfaceDecl& d, const Method& m, std::string& out) {
  const std::string scope = d.relName + "::Client::";
  const std::string caps = usesCaps(m) ? ", caps_" : "";
  out += "template <::lrpc::Call C>\n";
  out += "::lrpc::Status " + scope + m.name + "In_(" + halfParams(m, true) + ") {\n";
  WriteSpec spec{m.qualifiedName + ": argument", "::lrpc::Errc::kInvalidArgument", "call_.args()", "call_.argTail", true,
                 "call_.copyTail"};
  spec.capId = "caps_.toFrame(";
  if (m.maxDepth != 0) spec.depth = std::to_string(m.maxDepth) + "u";
  emitWrite(m.params, m.argsSize, [](const Field& f) { return f.name; }, spec, 2, out);
  if (usesCaps(m)) out += "  (void)caps_;  // used by the parameters or only by the results\n";
  if (m.params.empty()) out += "  (void)call_;\n";
  out += "  return ::lrpc::Status::ok();\n}\n\n";

  if (m.results.empty()) {
    out += "template <::lrpc::Call C>\n";
    out += "::lrpc::Status " + scope + m.name + "Out_(" + halfParams(m, false) + ") {\n";
    if (usesCaps(m)) out += "  (void)caps_;\n";
    out += "  (void)call_;\n";
    out += "  return ::lrpc::Status::ok();\n}\n\n";
  } else {
    const std::string value = replyValue(m);
    out += "template <::lrpc::Call C>\n";
    out += "::lrpc::Status " + scope + m.name + "Read_(" + halfParams(m, false) + ", " + value + "& out_) {\n";
    if (usesCaps(m)) out += "  (void)caps_;  // used by the results or only by the parameters\n";
    out += "  // The server is not trusted with our memory either: copy the results out, then check them.\n";
    out += "  " + m.frameScope + "::" + m.framePrefix + "ResultsFrame frame_;\n";
    out += "  std::memcpy(&frame_, call_.results(), sizeof frame_);\n";
    emitBoolFix("frame_", frameBoolOffsets(m.results), 2, out);
    bool anyVar = false;
    for (const auto& f : m.results) anyVar = anyVar || isVariable(f.type);
    if (anyCoded(m.results)) {
      out += "  ::lrpc::codec::TailCopy tailCopy_;  // small tails are decoded from one bulk copy\n";
      out += "  const std::span<const std::byte> tail_ = tailCopy_.of(call_.resultTail());\n";
      out += "  ::lrpc::codec::Reader rd_(tail_" + depthArg(m) + ");\n";
    } else if (anyVar) {
      out += "  const std::span<const std::byte> tail_ = call_.resultTail();\n";
    }
    const bool single = m.results.size() == 1;
    for (const auto& f : m.results) {
      const std::string target = single ? "out_" : "out_." + f.name;
      if (!isVariable(f.type)) {
        emitFrameResult(f, target, out);
      } else {
        emitReadVar(f, "frame_." + f.name, target, m.qualifiedName + ": result", 2, false, out);
      }
    }
    out += "  return ::lrpc::Status::ok();\n}\n\n";

    out += "template <::lrpc::Call C>\n";
    out += returnType(m) + " " + scope + m.name + "Out_(" + halfParams(m, false) + ") {\n";
    out += "  " + value + " value_{};\n";
    out += "  if (::lrpc::Status s_ = " + m.name + "Read_(call_" + caps + ", value_); !s_.isOk()) return s_;\n";
    out += "  return value_;\n}\n\n";
  }

  // The synchronous call: To_ into a target (lrpc::Into, or Via's own value), Via returning it.
  std::string ps = paramList(m);
  const std::string head = "C& call_" + (ps.empty() ? "" : ", " + ps);
  const std::string body = [&] {
    std::string b = "  if (!call_.status().isOk()) return call_.status();\n";
    if (usesCaps(m)) b += "  ::lrpc::detail::ClientCaps caps_(call_.binding());  // the capabilities this call passes\n";
    if (const Field* apart = apartResult(m)) {
      // Before the arguments: a same-host call with a large argument is published while they
      // are written, and the server must know by then that it may stream the result.
      b += "  // The tail is that one Data value: it may arrive apart, straight into the value, or streamed.\n";
      b += "  call_.resultTailApart(" + std::string(m.results.size() == 1 ? "out_" : "out_." + apart->name) + ");\n";
    }
    b += "  if (::lrpc::Status s_ = " + m.name + "In_(call_" + caps + argNames(m) + "); !s_.isOk()) return s_;\n";
    b += "  if (::lrpc::Status s_ = call_.invoke(); !s_.isOk()) return s_;\n";
    return b;
  }();
  out += "template <::lrpc::Call C>\n";
  if (m.results.empty()) {
    out += "::lrpc::Status " + scope + m.name + "Via(" + head + ") {\n" + body;
    out += "  return " + m.name + "Out_(call_" + caps + ");\n}\n\n";
    return;
  }
  out += "::lrpc::Status " + scope + m.name + "To_(" + head + ", " + replyValue(m) + "& out_) {\n" + body;
  out += "  return " + m.name + "Read_(call_" + caps + ", out_);\n}\n\n";
  out += "template <::lrpc::Call C>\n";
  out += returnType(m) + " " + scope + m.name + "Via(" + head + ") {\n";
  out += "  " + replyValue(m) + " value_{};\n";
  out += "  if (::lrpc::Status s_ = " + m.name + "To_(call_" + argNames(m) + ", value_); !s_.isOk()) return s_;\n";
  out += "  return value_;\n}\n\n";
}

}  // namespace lrpc::stubgen
