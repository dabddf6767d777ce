// server/http/route_table.h: pattern matching, first-match order, and the 404/405 decision
// every API face takes from its table.
#include "server/http/route_table.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace corral::server {
namespace {

bool Matches(const char* pattern, const char* path, PathParams* params = nullptr) {
  PathParams scratch;
  return MatchRoutePattern(pattern, path, params ? params : &scratch);
}

TEST(RouteTable, LiteralsMatchWholeSegments) {
  EXPECT_TRUE(Matches("v1/shell/exec", "v1/shell/exec"));
  EXPECT_TRUE(Matches("/health", "/health"));
  EXPECT_TRUE(Matches("/health", "health")) << "a leading slash on either side is ignored";
  EXPECT_FALSE(Matches("/health", "/health/"));
  EXPECT_FALSE(Matches("/health", "/healthz"));
  EXPECT_FALSE(Matches("/health", "//health"));
  EXPECT_FALSE(Matches("v1/shell/exec", "v1/shell"));
  EXPECT_FALSE(Matches("v1/shell", "v1/shell/exec"));
}

TEST(RouteTable, ParametersBindOneNonEmptySegment) {
  PathParams p;
  ASSERT_TRUE(Matches("v1/bash/sessions/{id}/close", "v1/bash/sessions/ab-12/close", &p));
  EXPECT_EQ(p.Get("id"), "ab-12");
  EXPECT_EQ(p.Get("other"), "") << "an unbound name reads as empty";
  EXPECT_FALSE(Matches("v1/bash/sessions/{id}/close", "v1/bash/sessions//close"));
  EXPECT_FALSE(Matches("v1/bash/sessions/{id}/close", "v1/bash/sessions/a/b/close"));
  ASSERT_TRUE(Matches("/sandboxes/{id}/{token}/{rest...}", "/sandboxes/s1/t0k/v1/shell/exec", &p));
  EXPECT_EQ(p.Get("id"), "s1");
  EXPECT_EQ(p.Get("token"), "t0k");
  EXPECT_EQ(p.Get("rest"), "v1/shell/exec");
}

TEST(RouteTable, TheRestIsNeverEmpty) {
  PathParams p;
  ASSERT_TRUE(Matches("/api/sandboxes/{id...}", "/api/sandboxes/a/b", &p));
  EXPECT_EQ(p.Get("id"), "a/b");
  EXPECT_FALSE(Matches("/api/sandboxes/{id...}", "/api/sandboxes"));
  EXPECT_FALSE(Matches("/api/sandboxes/{id...}", "/api/sandboxes/"));
  EXPECT_FALSE(Matches("/sandboxes/{id}/{token}/{rest...}", "/sandboxes/s1/t0k"));
  EXPECT_FALSE(Matches("/sandboxes/{id}/{token}/{rest...}", "/sandboxes/s1"));
}

TEST(RouteTable, BadPatternsAreRefusedWhenAdded) {
  EXPECT_EQ(RoutePatternProblem("v1/shell/sessions/{id}"), "");
  EXPECT_NE(RoutePatternProblem("v1//exec"), "");
  EXPECT_NE(RoutePatternProblem("{rest...}/x"), "");
  EXPECT_NE(RoutePatternProblem("v1/{}"), "");
  EXPECT_NE(RoutePatternProblem("v1/a{id}"), "");
  RouteTable<int> t;
  EXPECT_THROW(t.Add("GET", "a//b", 1), std::logic_error);
}

TEST(RouteTable, FirstMatchWinsAndTheOutcomeIsDerived) {
  RouteTable<int> t;
  t.Add("POST", "v1/shell/sessions/create", 1)
      .Add("GET", "v1/shell/sessions", 2)
      .Add("DELETE", "v1/shell/sessions", 3)
      .Add("DELETE", "v1/shell/sessions/{id}", 4)
      .Add("*", "v1/any/{rest...}", 5);

  auto create = t.Find("POST", "v1/shell/sessions/create");
  ASSERT_EQ(create.outcome, RouteOutcome::kFound);
  EXPECT_EQ(*create.handler, 1);
  EXPECT_EQ(create.pattern, "v1/shell/sessions/create");

  auto remove = t.Find("DELETE", "v1/shell/sessions/create");
  ASSERT_EQ(remove.outcome, RouteOutcome::kFound) << "a session may be called 'create'";
  EXPECT_EQ(*remove.handler, 4);
  EXPECT_EQ(remove.params.Get("id"), "create");

  auto list = t.Find("DELETE", "v1/shell/sessions");
  ASSERT_EQ(list.outcome, RouteOutcome::kFound);
  EXPECT_EQ(*list.handler, 3);

  auto wrong = t.Find("PUT", "v1/shell/sessions");
  EXPECT_EQ(wrong.outcome, RouteOutcome::kMethodNotAllowed);
  EXPECT_EQ(wrong.allow, "GET, DELETE");
  EXPECT_EQ(wrong.pattern, "v1/shell/sessions");
  EXPECT_EQ(wrong.handler, nullptr);

  auto wrong_create = t.Find("GET", "v1/shell/sessions/create");
  EXPECT_EQ(wrong_create.outcome, RouteOutcome::kMethodNotAllowed);
  EXPECT_EQ(wrong_create.allow, "POST, DELETE");

  EXPECT_EQ(t.Find("GET", "v1/shell/nope").outcome, RouteOutcome::kNotFound);
  EXPECT_EQ(t.Find("GET", "").outcome, RouteOutcome::kNotFound);

  auto any = t.Find("PATCH", "v1/any/x/y");
  ASSERT_EQ(any.outcome, RouteOutcome::kFound) << "'*' takes every method";
  EXPECT_EQ(any.params.Get("rest"), "x/y");
  EXPECT_EQ(t.routes().size(), 5u);
}

TEST(RouteTable, LabelsWriteTheRestAsAPlainParameter) {
  EXPECT_EQ(RouteLabel("/api/sandboxes/{id...}"), "/api/sandboxes/{id}");
  EXPECT_EQ(RouteLabel("/health"), "/health");
}

}  // namespace
}  // namespace corral::server
