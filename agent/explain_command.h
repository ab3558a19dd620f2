// `koordlet explain`: asks a running agent's GET /explain and prints the answer as
// a table (or, with --json, as the agent gave it). Flags:
//   --addr=HOST:PORT   the agent's metrics address (default 127.0.0.1:9316; ":9316"
//                      means this host)
//   --pod=NS/NAME | --uid=UID | --path=DIR [--below]   what to explain
//   --knob=FILE        narrow to one knob (alone: that knob everywhere)
//   --json             print the JSON answer
//   --timeout=SECONDS  for the whole request (default 10)
// Exit status: 0 answered, 1 the agent answered an error (its message printed), 2
// bad flags or no agent there.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"

namespace koord {

int runExplainCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// One GET to a local agent's HTTP server. addr: HOST:PORT, ":PORT" (this host).
struct AgentReply {
  unsigned status = 0;
  std::string body;
};
Result<AgentReply> agentGet(const std::string& addr, const std::string& target,
                            std::chrono::seconds timeout);

// The query string for GET /explain from the subcommand's values, each %-encoded.
std::string explainQueryString(const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace koord
