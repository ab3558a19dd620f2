#include "qos/hook_reconcile.h"
