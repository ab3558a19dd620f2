#include "nri/ttrpc.h"
