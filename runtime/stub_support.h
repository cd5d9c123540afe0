// What generated source files (foo.lrpc.cc) are compiled against, and nothing else includes
// for its own sake: both call paths (runtime/remote_call.h, runtime/local_call.h), which model
// the Call concept of runtime/contract.h, the ServerCall a generated dispatch reads and writes
// (runtime/server_call.h), the codec's templates and the capability tables. The types a
// generated header names are in runtime/contract.h; user code that includes only foo.lrpc.h
// compiles none of this.
#pragma once

#include <memory>

#include "runtime/capability.h"
#include "runtime/codec.h"
#include "runtime/codec_view.h"
#include "runtime/contract.h"
#include "runtime/local_call.h"
#include "runtime/plain_call.h"
#include "runtime/remote_call.h"
#include "runtime/server_call.h"

namespace lrpc::detail {

// The binding a generated Foo::Client keeps: `binding` when it is for `iface` or for an
// interface that extends it at the start of its PDL (isA); otherwise (none,
// or one for another interface) a stand-in whose remote channel answers every call with
// kBindingRejected naming both, so that a client's first statement can stay the test of the
// remote bit, with no null check.
std::shared_ptr<Binding> checkedBinding(std::shared_ptr<Binding> binding, const InterfaceDescriptor& iface);

}  // namespace lrpc::detail
