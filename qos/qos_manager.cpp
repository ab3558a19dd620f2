#include "qos/qos_manager.h"
