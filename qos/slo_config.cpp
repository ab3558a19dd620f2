#include "qos/slo_config.h"
