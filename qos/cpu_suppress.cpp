#include "qos/cpu_suppress.h"
