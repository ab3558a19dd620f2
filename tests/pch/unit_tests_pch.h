// The precompiled header of the unit-test binaries (tests/meson.build): the headers
// nearly every test file parses, Catch2's above all. Meson force-includes it in each
// file of a target that names it; a test still includes what it uses itself.
// (No include guard: a precompiled header is compiled as a file of its own.)

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
