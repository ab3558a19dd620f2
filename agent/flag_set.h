// FlagSet: a command-line parser with the semantics of Go's `flag` package, so
// that the argument lists written for koordlet (DaemonSet manifests, Helm charts)
// parse the same here:
//   -name / --name                    one or two dashes, same meaning
//   -name=value / -name value         the second form not for booleans
//   -bool / -bool=false               a bare boolean means true; Go's ParseBool spellings
//   --                                ends the flags
//   -h / -help / --help               request help (parse stops there)
// Unlike Go, a non-flag argument is an error (koordlet takes none, so a stray word
// is almost always a mistake such as "-dry-run false"), and so is an unknown flag.
//
// Flags bind to caller-owned variables, which must outlive the FlagSet's parse().
// A flag can also be registered as "accepted but not implemented": its value is
// validated by type and discarded, and parse() records that it was given, so the
// caller can warn about each one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/quote.h"
#include "base/result.h"

namespace koord {

// Go's strconv.ParseBool: 1 t T TRUE true True 0 f F FALSE false False.
Result<bool> parseGoBool(std::string_view text);
// Go's strconv.ParseInt / ParseUint with a bit size (8..64). Base 0 is Go's literal
// syntax (0x, 0o, 0b, a leading 0 for octal, '_' between digits), which is what
// Go's int flags accept; base 10 is plain decimal.
Result<int64_t> parseGoInt(std::string_view text, int base, int bits);
Result<uint64_t> parseGoUint(std::string_view text, int base, int bits);
// Go's strconv.ParseFloat(s, 64): decimal or hex (0x1p-2) literals, "inf",
// "infinity", "nan" in any case; a finite literal too large is an error.
Result<double> parseGoFloat(std::string_view text);
// A comma-separated list with CSV quoting ("a,\"b,c\""), as Kubernetes' string
// slice flags read it; "" is the empty list.
Result<std::vector<std::string>> parseCommaList(std::string_view text);
// Go's FormatFloat(f, 'g', -1, 64): the shortest text that reads back the same.
std::string formatGoFloat(double value);

// One registered flag as documentation sees it (docs/reference.md's flag table).
struct FlagInfo {
  std::string name;         // without dashes
  std::string typeName;     // "bool" for booleans (usage() shows none, as Go's does)
  std::string defaultText;  // the default as usage() writes it: strings quoted, even ""
  std::string help;
  bool implemented = true;  // false: accepted for koordlet compatibility, no effect
};

// The value types a flag can have; used for not-implemented flags, whose value
// is checked but stored nowhere.
enum class FlagType { kString, kBool, kInt, kInt64, kUint64, kDouble, kDuration, kStringSlice };

class FlagSet {
 public:
  // Applies one value. Returns an error message without the flag's name, e.g.
  // `invalid duration "1x": unknown unit "x"`; parse() prefixes "flag --name: ".
  using Setter = std::function<Status(std::string_view value)>;

  // Typed bindings. The target's value at registration is the default shown in
  // usage(). Repeating a flag: the last value wins, except string slices, where
  // the first use replaces the default and later uses append (as in Kubernetes).
  void stringVar(std::string* target, std::string name, std::string help);
  void boolVar(bool* target, std::string name, std::string help);
  void intVar(int* target, std::string name, std::string help);
  void int64Var(int64_t* target, std::string name, std::string help);
  void uint64Var(uint64_t* target, std::string name, std::string help);
  void doubleVar(double* target, std::string name, std::string help);
  void durationVar(std::chrono::nanoseconds* target, std::string name, std::string help);
  void stringSliceVar(std::vector<std::string>* target, std::string name, std::string help);
  // A flag whose value the caller interprets (feature gates, validated ranges).
  // typeName is what usage() shows ("mapStringBool", "duration", ...); isBool
  // makes it a boolean flag (bare means "true", no separate value argument).
  void funcVar(std::string name, std::string typeName, std::string defaultText, std::string help,
               Setter set, bool isBool = false);

  // "Accepted for koordlet compatibility but not implemented": the value is checked
  // as `type` would be, then dropped; the flag's name goes to notImplementedGiven().
  void notImplemented(std::string name, FlagType type, std::string defaultText, std::string help);
  // The same with a caller-provided check (for Go flag.Value types of koordlet's).
  void notImplementedFunc(std::string name, std::string typeName, std::string defaultText,
                          std::string help, Setter validate, bool isBool = false);

  // Parses arguments without the program name. Stops at the first error, at "--"
  // (anything after it is an error), or at a help request.
  Status parse(const std::vector<std::string>& args);

  bool helpRequested() const { return helpRequested_; }
  // Names of the flags set on the command line, sorted.
  std::vector<std::string> given() const;
  bool isGiven(std::string_view name) const;
  // Names of not-implemented flags set on the command line, in first-use order.
  const std::vector<std::string>& notImplementedGiven() const { return notImplementedGiven_; }
  bool has(std::string_view name) const { return flags_.find(name) != flags_.end(); }
  // Every registered flag, sorted by name. The -h/-help builtin is not among them.
  std::vector<FlagInfo> list() const;

  // Every flag, sorted by name, in the layout of Go's PrintDefaults:
  //   "  -addr string\n    \tport of koordlet server (default \":9316\")\n"
  std::string usage() const;

 private:
  struct Flag {
    std::string typeName;     // "" for booleans, as Go prints them
    std::string defaultText;  // shown unless equal to zeroText
    std::string zeroText;
    bool quoteDefault = false;  // Go quotes string defaults
    std::string help;
    bool isBool = false;
    bool notImplemented = false;
    Setter set;
    bool given = false;
  };
  void add(std::string name, Flag flag);
  void typedVar(std::string name, std::string typeName, std::string defaultText,
                std::string zeroText, std::string help, Setter set);

  std::map<std::string, Flag, std::less<>> flags_;
  std::vector<std::string> notImplementedGiven_;
  bool helpRequested_ = false;
};

}  // namespace koord
