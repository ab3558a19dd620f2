#include "metrics/cpu_topology.h"
