// The Mailbox service of deferred.capnp: takers' replies wait in a box until a put answers them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "deferred.lrpc.h"
#include "runtime/base/mutex.h"

namespace lrpc::deferredtest {

// The boxes, shared by a Mailbox and its children.
struct Boxes {
  Mutex mu;
  std::map<uint32_t, std::vector<Reply<std::string>>> takers LRPC_GUARDED_BY(mu);
  std::atomic<uint32_t> held{0};
  std::atomic<uint32_t> destroyed{0};
};

class MailboxImpl final : public Mailbox::Server {
 public:
  explicit MailboxImpl(std::shared_ptr<Boxes> boxes = std::make_shared<Boxes>()) : boxes_(std::move(boxes)) {}
  ~MailboxImpl() override {
    if (answerer_.joinable()) answerer_.join();
    boxes_->destroyed.fetch_add(1);
  }

  void take(uint32_t box, Reply<std::string>&& reply) override {
    MutexLock lock(boxes_->mu);
    boxes_->takers[box].push_back(std::move(reply));
  }
  Result<Mailbox::PutResults> put(uint32_t box, std::string_view letter) override {
    std::vector<Reply<std::string>> due;
    {
      MutexLock lock(boxes_->mu);
      due.swap(boxes_->takers[box]);
    }
    Mailbox::PutResults r{0, 0};
    for (auto& reply : due) {
      if (reply.cancelled()) ++r.cancelled;
      reply.send(std::string(letter));
      ++r.answered;
    }
    return r;
  }
  Result<uint32_t> waiting(uint32_t box) override {
    MutexLock lock(boxes_->mu);
    auto it = boxes_->takers.find(box);
    return it == boxes_->takers.end() ? 0u : static_cast<uint32_t>(it->second.size());
  }
  void echo(uint64_t value, Reply<uint64_t>&& reply) override { reply.send(value); }
  void drop(Reply<uint64_t>&& reply) override { (void)reply; }
  void fail(std::string_view text, Reply<void>&& reply) override {
    (void)reply;
    throw std::runtime_error(std::string(text));
  }
  void big(uint32_t bytes, Reply<std::vector<uint8_t>>&& reply) override {
    if (answerer_.joinable()) answerer_.join();
    answerer_ = std::thread([bytes, r = std::move(reply)]() mutable {
      std::vector<uint8_t> blob(bytes);
      for (uint32_t i = 0; i < bytes; ++i) blob[i] = static_cast<uint8_t>(i * 7);
      r.send(std::move(blob));
    });
  }
  Result<Mailbox::Client> child() override { return Mailbox::Client::serve(std::make_shared<MailboxImpl>(boxes_)); }
  void hold(Reply<void>&& reply) override {
    MutexLock lock(ownMu_);
    own_.push_back(std::move(reply));
    boxes_->held.fetch_add(1);
  }
  Result<Mailbox::CountsResults> counts() override {
    return Mailbox::CountsResults{boxes_->held.load(), boxes_->destroyed.load()};
  }

  std::shared_ptr<Boxes> boxes() const { return boxes_; }

 private:
  std::shared_ptr<Boxes> boxes_;
  std::thread answerer_;
  Mutex ownMu_;
  std::vector<Reply<void>> own_ LRPC_GUARDED_BY(ownMu_);  // dropped with the object
};

}  // namespace lrpc::deferredtest
