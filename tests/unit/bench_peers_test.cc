#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/peers.h"

namespace corral::bench {
namespace {

TEST(BenchOciConfig, IsAMinimalReadOnlyBundleWithEveryNamespaceAndNoCapabilities) {
  auto j = nlohmann::json::parse(OciConfigJson("/tmp/b/rootfs", {"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(j["root"]["path"], "/tmp/b/rootfs");
  EXPECT_EQ(j["root"]["readonly"], true);
  EXPECT_EQ(j["process"]["terminal"], false);
  EXPECT_EQ(j["process"]["args"], (nlohmann::json{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(j["process"]["noNewPrivileges"], true);
  EXPECT_TRUE(j["process"]["capabilities"]["bounding"].empty());
  std::vector<std::string> ns;
  for (const auto& n : j["linux"]["namespaces"]) ns.push_back(n["type"]);
  EXPECT_EQ(ns, (std::vector<std::string>{"pid", "network", "ipc", "uts", "mount"}));
}

}  // namespace
}  // namespace corral::bench
