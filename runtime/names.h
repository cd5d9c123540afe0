// Where exported names live. Names are per user: each is a socket `<dir>/<name>.sock` next to
// a lock file `<dir>/<name>.lock` that the exporting process holds with flock() for as long as
// it serves the name (and removes, with the socket, when it stops). The directory is, in order:
//   $LRPC_DIR if set, else $XDG_RUNTIME_DIR/lrpc, else /tmp/lrpc-<uid>
// (or ExporterOptions::dir / ImportOptions::dir). A directory we create gets mode 0700; one we
// find must be a directory owned by our effective uid, root, or a uid the caller trusts, and
// not writable by group or others unless sticky (/tmp style), else kPermissionDenied.
#pragma once

#include <sys/socket.h>  // ucred
#include <sys/types.h>

#include <span>
#include <string>
#include <string_view>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"

namespace lrpc::detail {

// The directory to use: `explicitDir` if not empty, else the default above. Creates it (0700)
// when missing and checks it.
Result<std::string> namesDir(std::string_view explicitDir, bool create, std::span<const uid_t> trustedOwners = {});

// A name is 1..64 characters of [A-Za-z0-9._-], not starting with '.'.
Status checkName(std::string_view name);

std::string socketPath(const std::string& dir, std::string_view name);
std::string lockPath(const std::string& dir, std::string_view name);

// A socket connected to the server that exports `name` in `explicitDir` (as namesDir takes
// it): kNotFound when nobody exports it, or its server is dead (the socket is left, nobody
// listens); kPermissionDenied when its server runs as a uid other than ours, root or one of
// `trustUids`. `peer`, when given, gets the server's credentials.
Result<OwnedFd> connectName(std::string_view name, std::string_view explicitDir, std::span<const uid_t> trustUids,
                            ucred* peer = nullptr);

// Takes the name's lock: kAlreadyExists when a live process holds it. A lock left by a dead
// process is free again (the kernel drops flocks with the last fd), so its name is reclaimed.
Result<OwnedFd> lockName(const std::string& dir, std::string_view name);

}  // namespace lrpc::detail
