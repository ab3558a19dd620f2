#include "qos/snapshot.h"
