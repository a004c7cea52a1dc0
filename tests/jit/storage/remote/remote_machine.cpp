// One "machine" of the fleet tests, as its own process, configured like any program that
// uses tropical: through the TROPICAL_REMOTE_* environment.
//
//   remote_machine flight DIGEST COMPILE_MS COMPILES_FILE
//       single flight on DIGEST; on a miss "compiles" (sleeps COMPILE_MS, appends a line to
//       COMPILES_FILE), publishes if it led; prints hit, leader or alone
//   remote_machine hold DIGEST
//       takes DIGEST's lease, prints "held", then sleeps until killed (at most 60 s)

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "tropical/storage/remote/remote_store.hpp"

using namespace tropical::storage::remote;

int main(int argc, char** argv) {
  auto options = remote_options_from_env(2, stderr_warnings());
  if (!options) {
    std::fprintf(stderr, "remote_machine: remote cache not configured\n");
    return 2;
  }
  RemoteStore store(std::move(*options));
  if (argc == 3 && std::strcmp(argv[1], "hold") == 0) {
    Lease lease = store.try_lease(argv[2]);
    if (!lease.held()) return 3;
    std::printf("held\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  if (argc == 5 && std::strcmp(argv[1], "flight") == 0) {
    const std::string digest = argv[2];
    FleetFlight flight = store.begin(digest);
    if (flight.role == FleetFlight::Role::kHit) {
      std::printf(flight.entry == "entry of " + digest ? "hit\n" : "wrong\n");
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(argv[3])));
    const int fd = open(argv[4], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, "compiled\n", 9) != 9) return 4;
    close(fd);
    if (flight.role == FleetFlight::Role::kLeader) store.publish(digest, "entry of " + digest);
    std::printf(flight.role == FleetFlight::Role::kLeader ? "leader\n" : "alone\n");
    return 0;
  }
  std::fprintf(stderr, "usage: remote_machine flight DIGEST COMPILE_MS FILE | hold DIGEST\n");
  return 1;
}
