#include "tests/support/nri_runtime_peer.h"
