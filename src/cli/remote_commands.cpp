// The fleet store in the `tropical` command: keygen, and the remote's part of warm and stats.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "output.hpp"
#include "tropical/storage/log.hpp"
#include "tropical/storage/remote/key_files.hpp"
#include "tropical/storage/remote/fleet_store.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cli {
namespace {

double ms(std::uint64_t ns) { return static_cast<double>(ns) * 1e-6; }

}  // namespace

storage::remote::FleetStore* fleet_store() {
  for (storage::Store* store : registry().stores().list()) {
    if (auto* remote = dynamic_cast<storage::remote::FleetStore*>(store)) return remote;
  }
  return nullptr;
}

std::string remote_text() {
  storage::remote::FleetStore* remote = fleet_store();
  if (remote == nullptr)
    return "remote: off (TROPICAL_REMOTE_CACHE, or remote in tropical.conf, unset or unusable)\n";
  const auto& o = remote->remote().options();
  const storage::remote::RemoteStats s = remote->remote().stats();
  const double rtt = s.round_trips == 0 ? 0.0 : ms(s.round_trip_ns) / static_cast<double>(s.round_trips);
  return format("%s (%s%s), this process:\n  hits %" PRIu64 ", misses %" PRIu64 ", refused %" PRIu64
                " (unsigned %" PRIu64 ", untrusted %" PRIu64 ", bad signature %" PRIu64 ", garbage %" PRIu64
                ", undecodable %" PRIu64 "), errors %" PRIu64 ", skipped %" PRIu64 ", published %" PRIu64
                "\n  bytes read %" PRIu64 ", bytes written %" PRIu64 ", round trips %" PRIu64
                " (mean %.3f ms, max %.3f ms), verify %.3f ms, leases %" PRIu64 ", lease waits %" PRIu64
                " (%.1f ms, %" PRIu64 " timed out)\n",
                remote->name().c_str(), o.may_read() ? "read" : "no read", o.may_write() ? ", publish" : "",
                s.hits, s.misses,
                s.refused_unsigned + s.refused_untrusted + s.refused_bad_signature + s.refused_garbage +
                    remote->undecodable(),
                s.refused_unsigned, s.refused_untrusted, s.refused_bad_signature, s.refused_garbage,
                remote->undecodable(), s.errors, s.skipped, s.published, s.bytes_read, s.bytes_written,
                s.round_trips, rtt, ms(s.max_round_trip_ns), ms(s.verify_ns), s.leases, s.lease_waits,
                ms(s.lease_wait_ns), s.lease_timeouts);
}

std::string remote_json() {
  storage::remote::FleetStore* remote = fleet_store();
  if (remote == nullptr) return "null";
  const auto& o = remote->remote().options();
  const storage::remote::RemoteStats s = remote->remote().stats();
  return format("{\"url\": %s, \"read\": %s, \"publish\": %s, \"hits\": %" PRIu64 ", \"misses\": %" PRIu64
                ", \"refused\": {\"unsigned\": %" PRIu64 ", \"untrusted\": %" PRIu64 ", \"bad_signature\": %" PRIu64
                ", \"garbage\": %" PRIu64 ", \"undecodable\": %" PRIu64 "}, \"errors\": %" PRIu64
                ", \"skipped\": %" PRIu64 ", \"published\": %" PRIu64 ", \"bytes_read\": %" PRIu64
                ", \"bytes_written\": %" PRIu64 ", \"round_trips\": %" PRIu64 ", \"round_trip_ns\": %" PRIu64
                ", \"max_round_trip_ns\": %" PRIu64 ", \"verify_ns\": %" PRIu64 ", \"leases\": %" PRIu64
                ", \"lease_waits\": %" PRIu64 ", \"lease_wait_ns\": %" PRIu64 ", \"lease_timeouts\": %" PRIu64 "}",
                json_quote(o.client.endpoint.url()).c_str(), o.may_read() ? "true" : "false",
                o.may_write() ? "true" : "false", s.hits, s.misses, s.refused_unsigned, s.refused_untrusted,
                s.refused_bad_signature, s.refused_garbage, remote->undecodable(), s.errors, s.skipped,
                s.published, s.bytes_read, s.bytes_written, s.round_trips, s.round_trip_ns, s.max_round_trip_ns,
                s.verify_ns, s.leases, s.lease_waits, s.lease_wait_ns, s.lease_timeouts);
}

int cmd_keygen(int argc, char** argv) {
  const Args args("keygen", argc, argv, {}, {}, 1);
  if (args.help()) {
    print(
        "usage: tropical keygen DIR\n\n"
        "Writes an ed25519 key pair for the fleet cache into DIR (created 0700):\n"
        "tropical-remote-signing.pem (private, 0600: TROPICAL_REMOTE_SIGNING_KEY on\n"
        "producers) and tropical-remote-signing.pub.pem (TROPICAL_REMOTE_TRUSTED_KEYS\n"
        "on every node). Never overwrites a file: exit 1 if one is there.\n");
    return kExitOk;
  }
  if (args.words().size() != 1) throw UsageError{"keygen wants one directory"};
  std::string error;
  const auto files = storage::remote::write_key_pair(args.words().front(), &error);
  if (!files) {
    std::fprintf(stderr, "tropical: keygen: %s\n", error.c_str());
    return kExitFailed;
  }
  print("private key " + files->private_key.string() + "\npublic key  " + files->public_key.string() + "\n");
  return kExitOk;
}

}  // namespace tropical::cli
