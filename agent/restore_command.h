// `koordlet restore`: puts every knob the agent owns back to what the kubelet and
// the runtime would hold without it (qos/restore_plan.h), removes the resctrl
// groups it created (their tasks fall back to the root group), and prints what it
// changed. It takes the agent's own flags (so a DaemonSet's args or the systemd
// unit's work as they are): the cgroup root, the kubelet endpoint, the feature
// gates (a knob kind no enabled strategy writes is never touched), --dry-run, the
// audit log (restore's writes are audited like the agent's).
//
// `koordlet restore` with no flags at all takes the running agent's (the one process
// of this binary serving as the agent): `kubectl exec <pod> -- koordlet restore`.
//
// A live agent on the same binary (in its pod, or the node's service) would write
// its values again within a round: restore first pauses it (SIGUSR2, agent.h
// pause()) and waits until its /config says so; the agent stays paused until it
// restarts. Without the kubelet (not reachable), the kube-QoS dirs and the
// besteffort tree's cpusets are restored and per-pod knobs are left as they are,
// said so; exit status 1 then, 0 when everything was restored or already was, 2
// on bad flags. Safe to run twice: the second run finds every value in place.
#pragma once

#include <sys/types.h>

#include <ostream>
#include <string>
#include <vector>

#include "agent/options.h"
#include "base/clock.h"
#include "base/result.h"

namespace koord {

// Other processes of this very binary that run as the agent (not as a subcommand).
std::vector<pid_t> runningAgents();
// A process's arguments after argv[0] (/proc/<pid>/cmdline).
Result<std::vector<std::string>> agentArgs(pid_t pid);

int runRestore(const Options& opts, const Clock& clock, int64_t pageSize, std::ostream& out,
               std::ostream& err);

}  // namespace koord
