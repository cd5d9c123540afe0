// A key-value store served under the name "kv" until Ctrl-C. Run kv_client in another terminal.
#include <signal.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kv.lrpc.h"
#include "runtime/exporter.h"

namespace {

// Handlers run on the server thread of the caller's A-stack, several at once: one mutex.
class Store final : public kv::KeyValue::Server {
 public:
  lrpc::Result<kv::KeyValue::GetResults> get(std::string_view key) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(std::string(key));
    if (it == map_.end()) return kv::KeyValue::GetResults{false, {}};
    return kv::KeyValue::GetResults{true, it->second};
  }
  lrpc::Result<bool> put(std::string_view key, std::span<const uint8_t> value) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = map_.insert_or_assign(std::string(key), std::vector<uint8_t>(value.begin(), value.end()));
    return !inserted;
  }
  lrpc::Result<bool> delete_(std::string_view key) override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.erase(std::string(key)) > 0;
  }
  lrpc::Result<std::vector<std::string>> list(std::string_view prefix) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> keys;
    for (auto it = map_.lower_bound(std::string(prefix)); it != map_.end() && it->first.starts_with(prefix); ++it) {
      keys.push_back(it->first);
    }
    return keys;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<uint8_t>> map_;
};

}  // namespace

int main() {
  sigset_t stop;  // blocked before any thread starts; sigwait() below takes them
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  Store store;
  lrpc::Exporter exporter;
  if (lrpc::Status s = exporter.add<kv::KeyValue>("kv", store); !s.isOk()) {
    std::fprintf(stderr, "kv_server: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("kv_server: serving \"kv\" in %s; Ctrl-C stops\n", exporter.dir().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
