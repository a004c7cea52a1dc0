// The subcommands of the `tropical` command, and what they share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "args.hpp"

namespace tropical::cli {

/// `tropical list`: the catalog, which kernels are cached for an arch, and every entry on disk (any NVRTC).
int cmd_list(int argc, char** argv);
/// `tropical warm`: compiles kernels into the disk cache; exit 1 if they could not be stored.
int cmd_warm(int argc, char** argv);
/// `tropical stats`: cache location, size and counters (text or JSON), or zeroes them.
int cmd_stats(int argc, char** argv);
/// `tropical clear`: removes every entry, or the named kernels' entries (every arch and NVRTC build).
int cmd_clear(int argc, char** argv);
/// `tropical config`: prints the settings of <cache dir>/tropical.conf, one of them, or sets one.
int cmd_config(int argc, char** argv);
/// Every store of the cache in lookup order: path, trusted or refused and why, entries, bytes, hits; a JSON
/// array with json.
std::string stores_report(bool json);
/// `tropical compile`: one NVRTC compile bypassing every cache, timed.
int cmd_compile(int argc, char** argv);
/// `tropical gemm`: one product on GPU 0, checked and timed.
int cmd_gemm(int argc, char** argv);
/// `tropical verify`: every kernel on GPU 0 against the CPU reference.
int cmd_verify(int argc, char** argv);

/// `tropical keygen DIR`: writes an ed25519 key pair for the fleet cache (never overwriting).
int cmd_keygen(int argc, char** argv);

/// The fleet store's settings and this process's counters, as text lines ("remote: off" when off).
std::string remote_text();
/// The same as one JSON value (null when off).
std::string remote_json();

/// The catalog id of the kernel called `name`; throws UsageError naming `tropical list`.
std::uint32_t kernel_by_name(const std::string& name);

/// The arch to work for: --arch if given, else GPU 0's, else sm_90. Whenever
/// NVRTC loads, the arch must be one it compiles for (else one UsageError for
/// --arch, Unavailable for GPU 0's); without NVRTC only the syntax is checked.
int target_arch(const Args& args);

}  // namespace tropical::cli
