// Unit tests of the Jinja subset chat templates use (expected texts are what jinja2 renders).
#include <catch2/catch_test_macros.hpp>

#include "trainer/jinja/jinja.h"

using air::jinja::Template;

TEST_CASE("jinja renders text") {
  CHECK(Template::parse("hello").render(nlohmann::json::object()).text == "hello");
}
