#include "runtime/names.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lrpc::detail {

Result<std::string> namesDir(std::string_view explicitDir, bool create, std::span<const uid_t> trustedOwners) {
  std::string dir(explicitDir);
  if (dir.empty()) {
    if (const char* e = std::getenv("LRPC_DIR"); e != nullptr && *e != '\0') {
      dir = e;
    } else if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') {
      dir = std::string(x) + "/lrpc";
    } else {
      dir = "/tmp/lrpc-" + std::to_string(::geteuid());
    }
  }
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::fromErrno(errno, "mkdir " + dir);
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status(Errc::kNotFound, "no lrpc directory " + dir);
    return Status::fromErrno(errno, "stat " + dir);
  }
  if (!S_ISDIR(st.st_mode)) return Status(Errc::kPermissionDenied, dir + " is not a directory");
  bool ownerOk = st.st_uid == ::geteuid() || st.st_uid == 0;
  for (uid_t u : trustedOwners) ownerOk = ownerOk || st.st_uid == u;
  if (!ownerOk) return Status(Errc::kPermissionDenied, dir + " is owned by uid " + std::to_string(st.st_uid));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return Status(Errc::kPermissionDenied, dir + " is writable by others");
  }
  return dir;
}

Status checkName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') {
    return Status(Errc::kInvalidArgument, "bad name \"" + std::string(name) + "\"");
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) return Status(Errc::kInvalidArgument, "bad character in name \"" + std::string(name) + "\"");
  }
  return {};
}

std::string socketPath(const std::string& dir, std::string_view name) {
  return dir + "/" + std::string(name) + ".sock";
}

std::string lockPath(const std::string& dir, std::string_view name) {
  return dir + "/" + std::string(name) + ".lock";
}

Result<OwnedFd> connectName(std::string_view name, std::string_view explicitDir, std::span<const uid_t> trustUids,
                            ucred* peer) {
  if (Status s = checkName(name); !s.isOk()) return s;
  Result<std::string> dir = namesDir(explicitDir, false, trustUids);
  if (!dir.isOk()) {
    if (dir.status().code() == Errc::kNotFound) return Status(Errc::kNotFound, "no server exports \"" + std::string(name) + "\"");
    return dir.status();
  }
  const std::string path = socketPath(*dir, name);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Status(Errc::kInvalidArgument, "socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  OwnedFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Status::fromErrno(errno, "socket");
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == ENOENT) return Status(Errc::kNotFound, "no server exports \"" + std::string(name) + "\" in " + *dir);
    if (errno == ECONNREFUSED) {
      return Status(Errc::kNotFound, "the server of \"" + std::string(name) + "\" is dead (" + path +
                                         " is left, nobody listens)");
    }
    if (errno == EACCES) return Status(Errc::kPermissionDenied, "may not connect to " + path);
    return Status::fromErrno(errno, "connect " + path);
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return Status::fromErrno(errno, "SO_PEERCRED");
  if (cred.uid != ::geteuid() && cred.uid != 0 && std::find(trustUids.begin(), trustUids.end(), cred.uid) == trustUids.end()) {
    return Status(Errc::kPermissionDenied, "\"" + std::string(name) + "\" is served by untrusted uid " +
                                               std::to_string(cred.uid));
  }
  if (peer != nullptr) *peer = cred;
  return sock;
}

Result<OwnedFd> lockName(const std::string& dir, std::string_view name) {
  std::string path = lockPath(dir, name);
  // The exporter that held a name removes its lock file at shutdown. Whoever locked the old
  // file just before that holds a lock on a file no longer there: check that the path still
  // names the locked file, and start over if not, so that two live exporters never both
  // believe they hold the name.
  for (int attempt = 0; attempt < 100; ++attempt) {
    OwnedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return Status::fromErrno(errno, "open " + path);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) {
        // Appended, not literal + string: g++ 12 -O3 warns falsely (-Wrestrict) on the latter.
        std::string what = "\"";
        what.append(name).append("\" is already exported by a live server");
        return Status(Errc::kAlreadyExists, std::move(what));
      }
      return Status::fromErrno(errno, "flock " + path);
    }
    struct stat locked, named;
    if (::fstat(fd.get(), &locked) != 0) return Status::fromErrno(errno, "fstat " + path);
    if (::stat(path.c_str(), &named) == 0 && named.st_ino == locked.st_ino && named.st_dev == locked.st_dev) {
      return fd;
    }
  }
  return Status(Errc::kIoError, "lock file " + path + " keeps changing");
}

}  // namespace lrpc::detail
