// The pure parts of the HTTP proxy: request targets and the head sent upstream.
#include <gtest/gtest.h>

#include <boost/beast/http.hpp>

#include "runtime/netproxy/proxy_http.h"
#include "runtime/netproxy/proxy_target.h"

namespace corral::runtime::net {
namespace {

namespace http = boost::beast::http;

TEST(NetProxyTarget, Authorities) {
  Result<HostPort> a = ParseAuthority("pypi.org:443", std::nullopt);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->host, "pypi.org");
  EXPECT_EQ(a->port, 443);
  a = ParseAuthority("[2001:db8::1]:8443", std::nullopt);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "2001:db8::1");
  EXPECT_EQ(a->port, 8443);
  a = ParseAuthority("example.com", 80);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->port, 80);
}

TEST(NetProxyTarget, BadAuthorities) {
  for (const char* text :
       {"pypi.org", ":443", "pypi.org:", "pypi.org:0", "pypi.org:65536", "pypi.org:44x",
        "user@pypi.org:443", "[::1", "[::1]x:80", "2001:db8::1:443", "pypi.org:123456"}) {
    EXPECT_FALSE(ParseAuthority(text, std::nullopt)) << text;
  }
}

TEST(NetProxyTarget, ForwardTargets) {
  Result<ForwardTarget> t = ParseForwardTarget("http://Example.com:8080/a/b?c=d#frag");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->endpoint.host, "Example.com");
  EXPECT_EQ(t->endpoint.port, 8080);
  EXPECT_EQ(t->authority, "Example.com:8080");
  EXPECT_EQ(t->origin_form, "/a/b?c=d");
  t = ParseForwardTarget("HTTP://example.com");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->endpoint.port, 80);
  EXPECT_EQ(t->origin_form, "/");
  t = ParseForwardTarget("http://example.com?q=1");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->origin_form, "/?q=1");
}

TEST(NetProxyTarget, NotForwardTargets) {
  Result<ForwardTarget> t = ParseForwardTarget("https://example.com/");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message().find("CONNECT"), std::string::npos);
  EXPECT_FALSE(ParseForwardTarget("/index.html"));
  EXPECT_FALSE(ParseForwardTarget("ftp://example.com/"));
  EXPECT_FALSE(ParseForwardTarget("http://user:pw@example.com/"));
  EXPECT_FALSE(ParseForwardTarget("http:///path"));
}

TEST(NetProxyHead, OriginFormWithHostFromTheUriAndConnectionClose) {
  http::request<http::empty_body> request{http::verb::post, "http://example.com:8080/upload?x=1",
                                          11};
  request.set(http::field::host, "evil.example");
  request.set(http::field::proxy_authorization, "Basic eA==");
  request.set("Proxy-Connection", "keep-alive");
  request.set(http::field::connection, "keep-alive, X-Hop");
  request.set("X-Hop", "1");
  request.set(http::field::content_length, "5");
  request.set(http::field::user_agent, "test");
  Result<ForwardTarget> target = ParseForwardTarget("http://example.com:8080/upload?x=1");
  ASSERT_TRUE(target);
  const std::string head = OriginFormHead(request.base(), *target);
  EXPECT_EQ(head.rfind("POST /upload?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Length: 5\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("User-Agent: test\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("evil.example"), std::string::npos) << head;
  EXPECT_EQ(head.find("Proxy-"), std::string::npos) << head;
  EXPECT_EQ(head.find("X-Hop"), std::string::npos) << head;
  EXPECT_EQ(head.find("keep-alive"), std::string::npos) << head;
  EXPECT_TRUE(head.ends_with("\r\nConnection: close\r\n\r\n")) << head;
  EXPECT_EQ(head.find("Connection:"), head.rfind("Connection:")) << head;
}

TEST(NetProxyHead, KeepsTheRequestVersion) {
  http::request<http::empty_body> request{http::verb::get, "http://example.com/", 10};
  Result<ForwardTarget> target = ParseForwardTarget("http://example.com/");
  ASSERT_TRUE(target);
  EXPECT_EQ(OriginFormHead(request.base(), *target).rfind("GET / HTTP/1.0\r\n", 0), 0u);
}

}  // namespace
}  // namespace corral::runtime::net
