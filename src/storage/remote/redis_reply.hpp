#pragma once

// How redis_connection.cpp's reader builds replies: hiredis parses the protocol and calls these functions,
// which build RedisReply trees directly (one copy of each string, arrays over 1024 elements refused at their
// header); and the header of a value, which the reader reads into its own buffer past hiredis. Private to
// src/storage/remote/.

#include <hiredis/read.h>

#include <cstddef>

namespace tropical::storage::remote {

/// The reply-object functions for redisReaderCreateWithFunctions: the root a reader returns is a RedisReply*
/// to delete (a null return from one of them is a reader error: out of memory, or an array too long).
redisReplyObjectFunctions* reply_functions() noexcept;

/// The length a bulk string reply announces in its first bytes ("$<length>\r\n"), or -1 if they are not one
/// (a nil "$-1", another kind of reply) or not all there yet; more than 18 digits: the largest long long.
long long announced_length(const char* bytes, std::size_t size) noexcept;

}  // namespace tropical::storage::remote
