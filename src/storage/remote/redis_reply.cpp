// Replies as RedisReply trees, built by hiredis through our reply-object functions (redis_connection.cpp's
// reader), and the header of a value, which that reader reads past hiredis.
#include "redis_reply.hpp"

#include <limits>
#include <new>
#include <string>

#include "tropical/storage/remote/redis_connection.hpp"

namespace tropical::storage::remote {
namespace {

// hiredis builds replies through these functions straight into RedisReply, not its own objects: a value is
// copied once (from the reader's buffer into the reply) instead of twice, and an array header longer than any
// reply this client asks for is refused before anything is allocated for it (hiredis's own objects calloc'ed
// the pointers of `*2000000000` first: seconds and gigabytes). A null return is an error of the reader.
constexpr int kMaxArrayElements = 1024;

RedisReply* place(const redisReadTask* task) {
  if (task->parent == nullptr) return new (std::nothrow) RedisReply;
  // The parent array was sized by create_array: its elements never move.
  auto* parent = static_cast<RedisReply*>(task->parent->obj);
  return &parent->elements[static_cast<std::size_t>(task->idx)];
}

void* create_string(const redisReadTask* task, char* str, std::size_t length) {
  RedisReply* r = place(task);
  if (r == nullptr) return nullptr;
  r->type = task->type == REDIS_REPLY_ERROR    ? RedisReply::Type::kError
            : task->type == REDIS_REPLY_STATUS ? RedisReply::Type::kStatus
                                               : RedisReply::Type::kString;
  try {
    r->text.assign(str, length);
  } catch (const std::bad_alloc&) {
    if (task->parent == nullptr) delete r;
    return nullptr;
  }
  return r;
}

void* create_array(const redisReadTask* task, int elements) {
  if (elements < 0 || elements > kMaxArrayElements) return nullptr;
  RedisReply* r = place(task);
  if (r == nullptr) return nullptr;
  r->type = RedisReply::Type::kArray;
  try {
    r->elements.resize(static_cast<std::size_t>(elements));
  } catch (const std::bad_alloc&) {
    if (task->parent == nullptr) delete r;
    return nullptr;
  }
  return r;
}

void* create_integer(const redisReadTask* task, long long value) {
  RedisReply* r = place(task);
  if (r == nullptr) return nullptr;
  r->type = RedisReply::Type::kInteger;
  r->integer = value;
  return r;
}

void* create_nil(const redisReadTask* task) { return place(task); }  // a RedisReply is kNil until set

// hiredis frees only the root of a reply (its children belong to it).
void free_reply(void* reply) { delete static_cast<RedisReply*>(reply); }

redisReplyObjectFunctions functions = {create_string, create_array, create_integer, create_nil, free_reply};

}  // namespace

redisReplyObjectFunctions* reply_functions() noexcept { return &functions; }

long long announced_length(const char* bytes, std::size_t size) noexcept {
  if (size < 4 || bytes[0] != '$') return -1;
  long long length = 0;
  for (std::size_t i = 1; i < size; ++i) {
    if (bytes[i] == '\r') return i > 1 && i + 1 < size && bytes[i + 1] == '\n' ? length : -1;
    if (bytes[i] < '0' || bytes[i] > '9') return -1;
    if (i > 18) return std::numeric_limits<long long>::max();  // more digits than any value we take
    length = length * 10 + (bytes[i] - '0');
  }
  return -1;
}

}  // namespace tropical::storage::remote
