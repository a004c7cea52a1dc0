#include "tropical/storage/remote/redis_url.hpp"

#include <gtest/gtest.h>

namespace tropical::storage::remote {
namespace {

TEST(RedisUrl, tcp_host_port_and_database) {
  const auto e = parse_redis_url("redis://cache.example.org:6379/3");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, RedisEndpoint::Kind::kTcp);
  EXPECT_EQ(e->host, "cache.example.org");
  EXPECT_EQ(e->port, 6379);
  EXPECT_EQ(e->db, 3);
}

TEST(RedisUrl, ipv4_and_bracketed_ipv6) {
  const auto v4 = parse_redis_url("redis://127.0.0.1:7000");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->db, 0);
  const auto v6 = parse_redis_url("redis://[::1]:7000/1");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 7000);
  EXPECT_EQ(v6->db, 1);
}

TEST(RedisUrl, unix_socket_with_and_without_database) {
  const auto plain = parse_redis_url("unix:///run/redis/redis.sock");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->kind, RedisEndpoint::Kind::kUnix);
  EXPECT_EQ(plain->path, "/run/redis/redis.sock");
  EXPECT_EQ(plain->db, 0);
  const auto db = parse_redis_url("unix:///tmp/r.sock?db=12");
  ASSERT_TRUE(db);
  EXPECT_EQ(db->path, "/tmp/r.sock");
  EXPECT_EQ(db->db, 12);
}

TEST(RedisUrl, url_round_trips) {
  for (const char* url : {"redis://h:1", "redis://h:65535/7", "redis://[fe80::1]:6379/2", "unix:///a/b.sock",
                          "unix:///a/b.sock?db=4"}) {
    const auto e = parse_redis_url(url);
    ASSERT_TRUE(e) << url;
    EXPECT_EQ(e->url(), url);
    EXPECT_EQ(parse_redis_url(e->url()), e);
  }
}

TEST(RedisUrl, malformed_urls_are_refused_with_a_reason) {
  for (const char* url : {"", "redis:/h:1", "http://h:1", "redis://h", "redis://h:", "redis://h:0", "redis://h:65536",
                          "redis://h:1x", "redis://h:+1", "redis://:1", "redis://h:1/", "redis://h:1/-1",
                          "redis://h:1/2147483648", "redis://h:1/1?x=2", "redis://user:pw@h:1", "redis://h_x:1",
                          "redis://[::1:1", "redis://[::1]", "redis://[zz]:1", "redis://h h:1", "unix://",
                          "unix://relative.sock", "unix:///a.sock?db=", "unix:///a.sock?db=x", "unix:///a.sock?x=1",
                          "unix:///a.sock#frag", "REDIS://h:1"}) {
    std::string error;
    EXPECT_FALSE(parse_redis_url(url, &error)) << url;
    EXPECT_FALSE(error.empty()) << url;
  }
}

TEST(RedisUrl, socket_path_longer_than_sockaddr_is_refused) {
  EXPECT_FALSE(parse_redis_url("unix:///" + std::string(107, 'a')));
  EXPECT_TRUE(parse_redis_url("unix:///" + std::string(106, 'a')));
}

}  // namespace
}  // namespace tropical::storage::remote
