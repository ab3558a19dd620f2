#include "qos/config_watcher.h"
