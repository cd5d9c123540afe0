#include "transport/secure/keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/base/fd.h"
#include "transport/secure/base64url.h"

namespace lrpc::secure {
namespace {

constexpr std::string_view kPrivateTag = "lrpc-x25519-private-key ";
constexpr std::string_view kPublicTag = "lrpc-x25519-public-key ";
constexpr std::string_view kPskTag = "lrpc-psk ";
constexpr size_t kKeyTextBytes = 43;  // base64url of 32 bytes, no padding

Result<Key> keyFromText(std::string_view text, std::string_view what) {
  if (text.size() != kKeyTextBytes)
    return Status(Errc::kInvalidArgument, std::string(what) + ": expected 43 base64url characters, got " +
                                              std::to_string(text.size()));
  auto raw = base64urlDecode(text);
  if (!raw || raw->size() != kKeyBytes)
    return Status(Errc::kInvalidArgument, std::string(what) + ": not base64url");
  Key k{};
  std::memcpy(k.data(), raw->data(), k.size());
  wipe(*raw);
  return k;
}

Status writeFile(const std::string& path, const std::string& text) {
  OwnedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    if (errno == EEXIST) return Status(Errc::kAlreadyExists, path + ": exists, not overwritten");
    return Status::fromErrno(errno, "create " + path);
  }
  // The umask may only have narrowed 0600; say it exactly anyway.
  if (::fchmod(fd.get(), 0600) != 0) return Status::fromErrno(errno, "chmod " + path);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::fromErrno(errno, "write " + path);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return Status::fromErrno(errno, "fsync " + path);
  return {};
}

// Reads a one-line key file `<tag><43 chars>\n`. `secret`: the file must be a regular file
// owned by us that no other user can read or write.
Result<Key> readKeyFile(const std::string& path, std::string_view tag, bool secret) {
  OwnedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status(Errc::kNotFound, path + ": no such key file");
    if (errno == ELOOP) return Status(Errc::kPermissionDenied, path + ": is a symbolic link");
    return Status::fromErrno(errno, "open " + path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::fromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) return Status(Errc::kInvalidArgument, path + ": not a regular file");
  if (secret && st.st_uid != ::geteuid())
    return Status(Errc::kPermissionDenied, path + ": owned by another user");
  if (secret && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status(Errc::kPermissionDenied,
                  path + ": mode " + mode + " lets other users at a secret key; chmod 600 it");
  }
  const size_t expected = tag.size() + kKeyTextBytes + 1;
  if (static_cast<size_t>(st.st_size) != expected)
    return Status(Errc::kInvalidArgument, path + ": " + std::to_string(st.st_size) + " bytes, a key file has " +
                                              std::to_string(expected));
  std::string text(expected, '\0');
  size_t done = 0;
  while (done < expected) {
    ssize_t n = ::read(fd.get(), text.data() + done, expected - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::fromErrno(errno, "read " + path);
    if (n == 0) return Status(Errc::kInvalidArgument, path + ": shorter than its size");
    done += static_cast<size_t>(n);
  }
  if (text.compare(0, tag.size(), tag) != 0 || text.back() != '\n') {
    wipe({reinterpret_cast<uint8_t*>(text.data()), text.size()});
    return Status(Errc::kInvalidArgument,
                  path + ": not a key file of this kind (expected a line \"" + std::string(tag) + "<key>\")");
  }
  auto key = keyFromText(std::string_view(text).substr(tag.size(), kKeyTextBytes), path);
  wipe({reinterpret_cast<uint8_t*>(text.data()), text.size()});
  return key;
}

std::string keyLine(std::string_view tag, const Key& key) {
  return std::string(tag) + base64urlEncode(key) + "\n";
}

}  // namespace

std::string PublicKey::toText() const { return base64urlEncode(bytes); }

Result<PublicKey> PublicKey::fromText(std::string_view text) {
  auto k = keyFromText(text, "public key");
  if (!k) return k.status();
  return PublicKey{*k};
}

Result<KeyPair> KeyPair::generate() {
  auto loaded = X25519Key::generate();
  if (!loaded) return loaded.status();
  auto priv = loaded->privateKey();
  if (!priv) return priv.status();
  KeyPair pair;
  pair.privateKey_ = *priv;
  wipe(*priv);
  pair.publicKey_.bytes = loaded->publicKey();
  pair.loaded_ = std::move(*loaded);
  return pair;
}

Result<KeyPair> KeyPair::fromPrivate(const Key& privateKey) {
  auto loaded = X25519Key::fromPrivate(privateKey);
  if (!loaded) return loaded.status();
  KeyPair pair;
  pair.privateKey_ = privateKey;
  pair.publicKey_.bytes = loaded->publicKey();
  pair.loaded_ = std::move(*loaded);
  return pair;
}

Result<PresharedKey> PresharedKey::generate() {
  PresharedKey psk;
  if (Status s = randomBytes(psk.bytes); !s.isOk()) return s;
  return psk;
}

Status writeKeyPair(const KeyPair& pair, const std::string& prefix) {
  const std::string keyPath = prefix + ".key";
  const std::string pubPath = prefix + ".pub";
  // Neither is written if the public file is in the way, so a failure leaves no half pair.
  struct stat st {};
  if (::lstat(pubPath.c_str(), &st) == 0) return Status(Errc::kAlreadyExists, pubPath + ": exists, not overwritten");
  std::string line = keyLine(kPrivateTag, pair.privateKey());
  Status s = writeFile(keyPath, line);
  wipe({reinterpret_cast<uint8_t*>(line.data()), line.size()});
  if (!s.isOk()) return s;
  s = writeFile(pubPath, keyLine(kPublicTag, pair.publicKey().bytes));
  if (!s.isOk()) ::unlink(keyPath.c_str());
  return s;
}

Status writePresharedKey(const PresharedKey& psk, const std::string& path) {
  std::string line = keyLine(kPskTag, psk.bytes);
  Status s = writeFile(path, line);
  wipe({reinterpret_cast<uint8_t*>(line.data()), line.size()});
  return s;
}

Result<KeyPair> loadKeyPair(const std::string& privateKeyPath) {
  auto priv = readKeyFile(privateKeyPath, kPrivateTag, true);
  if (!priv) return priv.status();
  auto pair = KeyPair::fromPrivate(*priv);
  wipe(*priv);
  return pair;
}

Result<PublicKey> loadPublicKey(const std::string& path) {
  auto k = readKeyFile(path, kPublicTag, false);
  if (!k) return k.status();
  return PublicKey{*k};
}

Result<PresharedKey> loadPresharedKey(const std::string& path) {
  auto k = readKeyFile(path, kPskTag, true);
  if (!k) return k.status();
  PresharedKey psk;
  psk.bytes = *k;
  wipe(*k);
  return psk;
}

}  // namespace lrpc::secure
