#include "qos/cpu_burst.h"
