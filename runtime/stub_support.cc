#include "runtime/stub_support.h"

#include <exception>
#include <string>

namespace lrpc::detail {

Status handlerThrew(const char* method) noexcept {
  // Building the detail can itself run out of memory: then the caller still learns that the
  // handler failed, without the text.
  try {
    std::string detail = std::string(method) + " threw";
    try {
      throw;
    } catch (const std::exception& e) {
      detail += ": ";
      detail += e.what();
    } catch (...) {
      detail += " a non-std::exception";
    }
    return Status(Errc::kServerFault, std::move(detail));
  } catch (...) {
    return Status(Errc::kServerFault);
  }
}

}  // namespace lrpc::detail
