// Model -> generated C++ text. Formatting only: every decision about sizes, offsets and what
// is supported was made in the model (model.cc and its parts). The output is described in
// stubgen/generated_code.md; emit.cc lists the emitter's own parts.
#pragma once

#include <string>

#include "stubgen/model.h"

namespace lrpc::stubgen {

struct FileText {
  std::string header;  // foo.lrpc.h
  std::string source;  // foo.lrpc.cc
};

FileText emitFile(const FileModel& file);

}  // namespace lrpc::stubgen
