#include "agent/explain_command.h"

#include <chrono>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "agent/explain.h"

namespace koord {

namespace {

namespace http = boost::beast::http;

std::string percentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace

Result<AgentReply> httpGet(const std::string& host, const std::string& port,
                           const std::string& target, std::chrono::seconds timeout) {
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    boost::beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(host, port));
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, host);
    req.set(http::field::user_agent, "koordlet-explain");
    http::write(stream, req);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);  // a whole node's knobs
    http::read(stream, buffer, parser);
    boost::system::error_code ec;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    return AgentReply{parser.get().result_int(), std::move(parser.get().body())};
  } catch (const std::exception& e) {
    return makeError(std::string("GET http://") + host + ":" + port + target + ": " + e.what());
  }
}

Result<AgentReply> agentGet(const std::string& addr, const std::string& target,
                            std::chrono::seconds timeout) {
  // ":9316" (the agent's --addr form) is this host.
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon + 1 == addr.size()) {
    return makeError("--addr: expected HOST:PORT, got \"" + addr + "\"");
  }
  std::string host = addr.substr(0, colon);
  if (host.empty()) host = "127.0.0.1";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return httpGet(host, addr.substr(colon + 1), target, timeout);
}

std::string explainQueryString(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [k, v] : params) {
    q += (q.empty() ? "" : "&") + k + "=" + percentEncode(v);
  }
  return q;
}

int runExplainCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string addr = "127.0.0.1:9316";
  std::vector<std::pair<std::string, std::string>> params;
  bool json = false;
  long timeout = 10;
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      out << "usage: koordlet explain [--addr=HOST:PORT] (--pod=NAMESPACE/NAME | --uid=UID | "
             "--path=DIR [--below]) [--knob=FILE] [--json] [--timeout=SECONDS]\n"
             "Asks the agent at --addr (default 127.0.0.1:9316) why each knob it manages "
             "there holds its value.\n";
      return 0;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--json" && eq == std::string::npos) {
      json = true;
    } else if (name == "--below" && eq == std::string::npos) {
      params.emplace_back("below", "true");
    } else if (eq == std::string::npos) {
      err << "koordlet explain: " << arg << ": expected --flag=value\n";
      return 2;
    } else if (name == "--addr") {
      addr = value;
    } else if (name == "--pod" || name == "--uid" || name == "--path" || name == "--knob") {
      params.emplace_back(name.substr(2), value);
    } else if (name == "--timeout") {
      try {
        timeout = std::stol(value);
      } catch (const std::exception&) {
        timeout = 0;
      }
      if (timeout <= 0) {
        err << "koordlet explain: --timeout: expected a positive number of seconds\n";
        return 2;
      }
    } else {
      err << "koordlet explain: unknown flag " << name
          << " (--addr, --pod, --uid, --path, --below, --knob, --json, --timeout)\n";
      return 2;
    }
  }
  // ":9316" (the agent's --addr form) is this host.
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon + 1 == addr.size()) {
    err << "koordlet explain: --addr: expected HOST:PORT, got \"" << addr << "\"\n";
    return 2;
  }
  std::string host = addr.substr(0, colon);
  if (host.empty()) host = "127.0.0.1";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port = addr.substr(colon + 1);
  auto reply =
      httpGet(host, port, "/explain?" + explainQueryString(params), std::chrono::seconds(timeout));
  if (!reply) {
    err << "koordlet explain: " << reply.error().message << "\n";
    return 2;
  }
  nlohmann::json answer = nlohmann::json::parse(reply->body, nullptr, false);
  if (answer.is_discarded()) {
    err << "koordlet explain: the answer (HTTP " << reply->status
        << ") is not JSON: " << reply->body.substr(0, 200) << "\n";
    return 2;
  }
  if (reply->status != 200) {
    const std::string fallback = "HTTP " + std::to_string(reply->status);
    const auto it = answer.is_object() ? answer.find("error") : answer.end();
    err << "koordlet explain: "
        << (answer.is_object() && it != answer.end() && it->is_string() ? it->get<std::string>()
                                                                        : fallback)
        << "\n";
    return 1;
  }
  out << (json ? answer.dump(2) + "\n" : explainTable(answer));
  return 0;
}

}  // namespace koord
