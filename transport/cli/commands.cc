#include "transport/cli/commands.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/introspect.h"
#include "runtime/names.h"
#include "transport/cli/latency.h"
#include "transport/cli/udp_probe.h"

namespace lrpc::cli {

namespace {

QueryOptions queryOptions(const CommonOptions& common) {
  QueryOptions q;
  q.dir = common.dir;
  q.timeout = common.timeout;
  return q;
}

// The server process's command name, from /proc (empty if it is gone or hidden).
std::string processName(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

int fail(const char* command, const Status& s) {
  std::fprintf(stderr, "lrpc %s: %s\n", command, s.toString().c_str());
  return 1;
}

std::string u64(uint64_t v) { return std::to_string(v); }

// "... server exports paper.capnp:Paper (id ...)" -> "paper.capnp:Paper"; else the whole text.
std::string interfaceFromRefusal(const std::string& text) {
  constexpr std::string_view kMarker = "server exports ";
  size_t at = text.find(kMarker);
  if (at == std::string::npos) return text;
  std::string rest = text.substr(at + kMarker.size());
  size_t end = rest.find(" (");
  return end == std::string::npos ? rest : rest.substr(0, end);
}

bool isUdpUri(const std::string& target) { return target.rfind("udp://", 0) == 0 || target.rfind("udp+clear://", 0) == 0; }

int pingUdp(const CommonOptions& common, const PingOptions& opts, const std::string& target) {
  Result<std::unique_ptr<UdpProbe>> probe = UdpProbe::open(target, ProbeKeys{opts.keyFile, opts.pskFile});
  if (!probe.isOk()) return fail("ping", probe.status());
  UdpProbe& p = **probe;
  LatencySamples samples;
  int errors = 0;
  Status lastError;
  for (int i = 1; i <= opts.count; ++i) {
    if (i > 1) std::this_thread::sleep_for(opts.interval);
    Result<std::chrono::nanoseconds> rtt = p.probe(common.timeout);
    if (!rtt.isOk()) lastError = rtt.status();
    if (!rtt.isOk() && rtt.status().code() == Errc::kNotFound) return fail("ping", rtt.status());
    if (i == 1 && rtt.isOk()) {
      std::string how = "session handshake round trips";
      if (p.secure() && p.handshakeTime()) {
        how = "secure: server key verified, handshake " + formatDuration(p.handshakeTime()->count()) +
              "; then sealed session handshake round trips";
      }
      std::printf("PING %s: \"%s\" serves %s (%s)\n", p.server().c_str(), p.name().c_str(),
                  interfaceFromRefusal(p.lastAnswer()).c_str(), how.c_str());
    }
    if (!rtt.isOk()) {
      ++errors;
      std::printf("seq=%d %s\n", i, rtt.status().toString().c_str());
    } else {
      samples.add(*rtt);
      if (!opts.quiet) std::printf("seq=%d time=%s\n", i, formatDuration(rtt->count()).c_str());
    }
    std::fflush(stdout);
  }
  std::printf("--- %s ping statistics ---\n%d sent, %zu answered, %d errors\n", target.c_str(), opts.count,
              samples.size(), errors);
  if (samples.size() > 0) std::printf("rtt %s\n", samples.summary().c_str());
  if (samples.size() == 0) return fail("ping", lastError);  // what went wrong, e.g. the handshake
  return 0;
}

}  // namespace

int listCommand(const CommonOptions& common, bool all) {
  std::vector<std::string> dirs;
  if (Result<std::string> own = detail::namesDir(common.dir, false); own.isOk()) {
    dirs.push_back(*own);
  } else if (!all) {
    if (own.status().code() != Errc::kNotFound) return fail("ls", own.status());
    std::printf("no names exported in %s\n", common.dir.empty() ? "the default directory" : common.dir.c_str());
    return 0;
  }
  if (all) {
    for (const char* pattern : {"/run/user/*/lrpc", "/tmp/lrpc-*"}) {
      glob_t g{};
      if (::glob(pattern, GLOB_ONLYDIR, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) {
          if (std::find(dirs.begin(), dirs.end(), g.gl_pathv[i]) == dirs.end()) dirs.emplace_back(g.gl_pathv[i]);
        }
      }
      ::globfree(&g);
    }
  }
  bool header = false;
  for (const std::string& dir : dirs) {
    QueryOptions q = queryOptions(common);
    q.dir = dir;
    // Another user's directory and servers are trusted as theirs: we only read and ask.
    struct stat st{};
    if (::stat(dir.c_str(), &st) == 0) q.trustUids.push_back(st.st_uid);
    Result<std::vector<std::string>> names = listNames(q);
    if (!names.isOk()) {
      std::printf("# %s: %s\n", dir.c_str(), names.status().toString().c_str());
      continue;
    }
    if (names->empty()) {
      std::printf("# %s: no names exported\n", dir.c_str());
      continue;
    }
    std::printf("# %s\n", dir.c_str());
    if (!header) {
      std::printf("%-20s %-32s %-8s %-16s %s\n", "NAME", "INTERFACE", "PID", "PROCESS", "BINDINGS");
      header = true;
    }
    for (const std::string& name : *names) {
      ServerInfo partial;
      Result<ServerInfo> info = queryServer(name, q, &partial);
      if (!info.isOk()) {
        // Who serves it is known even when the server refuses our query (another user's).
        std::string pid = partial.pid > 0 ? std::to_string(partial.pid) : "-";
        std::string proc = partial.pid > 0 ? processName(partial.pid) : "-";
        std::printf("%-20s %-32s %-8s %-16s (%s)\n", name.c_str(), "-", pid.c_str(), proc.empty() ? "-" : proc.c_str(),
                    info.status().toString().c_str());
        continue;
      }
      std::printf("%-20s %-32s %-8d %-16s %s\n", name.c_str(), info->interfaceName.c_str(), static_cast<int>(info->pid),
                  processName(info->pid).c_str(), u64(info->nameBindings).c_str());
    }
  }
  return 0;
}

int statCommand(const CommonOptions& common, const std::string& name) {
  Result<ServerInfo> info = queryServer(name, queryOptions(common));
  if (!info.isOk()) return fail("stat", info.status());
  const ServerInfo& i = *info;
  const ExporterStats& st = i.stats;
  std::printf("name:             %s\n", i.name.c_str());
  std::printf("interface:        %s (id 0x%016" PRIx64 ", signature 0x%016" PRIx64 ", %u procedures)\n",
              i.interfaceName.c_str(), i.interfaceId, i.signatureHash, i.procedureCount);
  std::printf("server:           pid %d (%s), uid %u\n", static_cast<int>(i.pid), processName(i.pid).c_str(),
              static_cast<unsigned>(i.uid));
  std::printf("bound to it:      %s clients\n", u64(i.nameBindings).c_str());
  std::printf("# counters of the whole server process (every name it exports)\n");
  std::printf("bindings:         %s live, %s accepted, %s rejected\n", u64(st.bindingsLive).c_str(),
              u64(st.bindingsTotal).c_str(), u64(st.bindingsRejected).c_str());
  std::printf("A-stacks in use:  %s (each with its server thread)\n", u64(st.serverThreads).c_str());
  std::printf("calls served:     %s\n", u64(st.callsServed).c_str());
  std::printf("call errors:      %s\n", u64(st.callErrors).c_str());
  return 0;
}

int pingCommand(const CommonOptions& common, const PingOptions& opts, const std::string& target) {
  if (isUdpUri(target)) return pingUdp(common, opts, target);
  Result<std::unique_ptr<Pinger>> pinger = Pinger::open(target, opts.mode, queryOptions(common));
  if (!pinger.isOk()) return fail("ping", pinger.status());
  Pinger& p = **pinger;
  const ServerInfo& info = p.info();
  std::printf("PING %s: %s, pid %d (%s), %s mode (Null round trips on a built-in A-stack)\n", target.c_str(),
              info.interfaceName.c_str(), static_cast<int>(info.pid), processName(info.pid).c_str(),
              std::string(transferModeName(opts.mode)).c_str());
  std::fflush(stdout);
  LatencySamples samples;
  int sent = 0;
  Status last;
  for (int i = 1; i <= opts.count; ++i) {
    if (i > 1) std::this_thread::sleep_for(opts.interval);
    ++sent;
    Result<std::chrono::nanoseconds> rtt = p.ping(common.timeout);
    if (!rtt.isOk()) {
      last = rtt.status();
      std::printf("seq=%d %s\n", i, last.toString().c_str());
      if (last.code() == Errc::kPeerDied) break;  // nothing more will answer
      continue;
    }
    samples.add(*rtt);
    if (!opts.quiet) std::printf("seq=%d time=%s\n", i, formatDuration(rtt->count()).c_str());
    std::fflush(stdout);
  }
  std::printf("--- %s ping statistics ---\n%d sent, %zu answered, %zu errors\n", target.c_str(), sent, samples.size(),
              static_cast<size_t>(sent) - samples.size());
  if (samples.size() > 0) std::printf("rtt %s\n", samples.summary().c_str());
  if (!last.isOk()) return fail("ping", last);
  return 0;
}

}  // namespace lrpc::cli
