#include "qos/runtime_hooks.h"
