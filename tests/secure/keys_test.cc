// Key pairs, their files (permissions, sizes, formats) and the text form of public keys.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "transport/secure/base64url.h"
#include "transport/secure/keys.h"

namespace lrpc::secure {
namespace {

class SecureKeyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lrpc-keys-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static void writeRaw(const std::string& p, const std::string& text, mode_t mode) {
    { std::ofstream(p, std::ios::binary) << text; }
    ASSERT_EQ(::chmod(p.c_str(), mode), 0);
  }
  static std::string readAll(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string dir_;
};

TEST_F(SecureKeyFiles, WrittenWith0600AndLoadedBack) {
  auto pair = KeyPair::generate();
  ASSERT_TRUE(pair.isOk());
  ASSERT_TRUE(writeKeyPair(*pair, path("server")).isOk());
  struct stat st {};
  ASSERT_EQ(::stat(path("server.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(path("server.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  auto loaded = loadKeyPair(path("server.key"));
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->privateKey(), pair->privateKey());
  EXPECT_EQ(loaded->publicKey(), pair->publicKey());
  auto pub = loadPublicKey(path("server.pub"));
  ASSERT_TRUE(pub.isOk()) << pub.status().toString();
  EXPECT_EQ(*pub, pair->publicKey());
  EXPECT_EQ(readAll(path("server.pub")), "lrpc-x25519-public-key " + pair->publicKey().toText() + "\n");
}

TEST_F(SecureKeyFiles, NeverOverwritesAnExistingPair) {
  auto a = KeyPair::generate();
  auto b = KeyPair::generate();
  ASSERT_TRUE(a.isOk() && b.isOk());
  ASSERT_TRUE(writeKeyPair(*a, path("k")).isOk());
  Status again = writeKeyPair(*b, path("k"));
  EXPECT_EQ(again.code(), Errc::kAlreadyExists);
  auto loaded = loadKeyPair(path("k.key"));
  ASSERT_TRUE(loaded.isOk());
  EXPECT_EQ(loaded->publicKey(), a->publicKey());
  // A lone .pub in the way: no .key is left behind either.
  writeRaw(path("lone.pub"), "x", 0644);
  EXPECT_EQ(writeKeyPair(*b, path("lone")).code(), Errc::kAlreadyExists);
  EXPECT_FALSE(std::filesystem::exists(path("lone.key")));
}

TEST_F(SecureKeyFiles, RefusesASecretOthersCanRead) {
  auto pair = KeyPair::generate();
  ASSERT_TRUE(pair.isOk());
  ASSERT_TRUE(writeKeyPair(*pair, path("s")).isOk());
  for (mode_t mode : {0640, 0604, 0644, 0660, 0602, 0610}) {
    ASSERT_EQ(::chmod(path("s.key").c_str(), mode), 0);
    auto r = loadKeyPair(path("s.key"));
    ASSERT_FALSE(r.isOk()) << std::oct << mode;
    EXPECT_EQ(r.status().code(), Errc::kPermissionDenied);
    EXPECT_NE(r.status().detail().find("chmod 600"), std::string::npos) << r.status().detail();
  }
  ASSERT_EQ(::chmod(path("s.key").c_str(), 0400), 0);
  EXPECT_TRUE(loadKeyPair(path("s.key")).isOk());
  // Public keys are not secret: any mode loads.
  ASSERT_EQ(::chmod(path("s.pub").c_str(), 0644), 0);
  EXPECT_TRUE(loadPublicKey(path("s.pub")).isOk());
}

TEST_F(SecureKeyFiles, RefusesWrongSizesFormatsAndKinds) {
  auto pair = KeyPair::generate();
  ASSERT_TRUE(pair.isOk());
  const std::string good = "lrpc-x25519-private-key " + base64urlEncode(pair->privateKey()) + "\n";
  ASSERT_TRUE((writeRaw(path("good.key"), good, 0600), loadKeyPair(path("good.key")).isOk()));

  struct Case {
    const char* what;
    std::string text;
  };
  const Case cases[] = {
      {"empty", ""},
      {"truncated", good.substr(0, good.size() - 2) + "\n"},
      {"one byte long", good + "x"},
      {"no newline", good.substr(0, good.size() - 1) + "A"},
      {"raw 32 bytes", std::string(32, '\x01')},
      {"public key in a private file", "lrpc-x25519-public-key " + pair->publicKey().toText() + "\n"},
      {"bad character", "lrpc-x25519-private-key " + std::string(42, 'A') + "*\n"},
      {"unused bits set", "lrpc-x25519-private-key " + std::string(42, 'A') + "B\n"},
      {"other tag", "lrpc-x25519-privat3-key " + base64urlEncode(pair->privateKey()) + "\n"},
  };
  for (const Case& c : cases) {
    writeRaw(path("bad.key"), c.text, 0600);
    auto r = loadKeyPair(path("bad.key"));
    ASSERT_FALSE(r.isOk()) << c.what;
    EXPECT_EQ(r.status().code(), Errc::kInvalidArgument) << c.what << ": " << r.status().toString();
    EXPECT_NE(r.status().detail().find("bad.key"), std::string::npos) << "the error names the file";
  }
  auto missing = loadKeyPair(path("none.key"));
  EXPECT_EQ(missing.status().code(), Errc::kNotFound);
  auto dir = loadKeyPair(dir_);
  EXPECT_FALSE(dir.isOk());
  ASSERT_EQ(::symlink(path("good.key").c_str(), path("link.key").c_str()), 0);
  EXPECT_EQ(loadKeyPair(path("link.key")).status().code(), Errc::kPermissionDenied);
}

TEST_F(SecureKeyFiles, PresharedKeyFiles) {
  auto psk = PresharedKey::generate();
  ASSERT_TRUE(psk.isOk());
  ASSERT_TRUE(writePresharedKey(*psk, path("psk")).isOk());
  auto loaded = loadPresharedKey(path("psk"));
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->bytes, psk->bytes);
  ASSERT_EQ(::chmod(path("psk").c_str(), 0644), 0);
  EXPECT_EQ(loadPresharedKey(path("psk")).status().code(), Errc::kPermissionDenied);
}

TEST(SecurePublicKeyText, RoundTripsAndRefusesBadText) {
  auto pair = KeyPair::generate();
  ASSERT_TRUE(pair.isOk());
  const std::string text = pair->publicKey().toText();
  EXPECT_EQ(text.size(), 43u);
  EXPECT_EQ(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            std::string::npos);
  auto back = PublicKey::fromText(text);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, pair->publicKey());
  for (std::string bad : {std::string(), text.substr(1), text + "A", text.substr(0, 42) + "=", text.substr(0, 42) + "+",
                          text.substr(0, 42) + "/"}) {
    auto r = PublicKey::fromText(bad);
    EXPECT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
  }
}

TEST(SecureBase64url, KnownVectors) {
  // RFC 4648 section 10, without padding, and the two URL-safe characters.
  auto enc = [](std::string_view s) {
    return base64urlEncode({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(enc(""), "");
  EXPECT_EQ(enc("f"), "Zg");
  EXPECT_EQ(enc("fo"), "Zm8");
  EXPECT_EQ(enc("foo"), "Zm9v");
  EXPECT_EQ(enc("foobar"), "Zm9vYmFy");
  const uint8_t high[] = {0xfb, 0xff};
  EXPECT_EQ(base64urlEncode(high), "-_8");
  auto dec = base64urlDecode("-_8");
  ASSERT_TRUE(dec.has_value());
  EXPECT_EQ(*dec, std::vector<uint8_t>(std::begin(high), std::end(high)));
  EXPECT_FALSE(base64urlDecode("Z").has_value());
  EXPECT_FALSE(base64urlDecode("Zh").has_value());  // unused bits set
}

}  // namespace
}  // namespace lrpc::secure
