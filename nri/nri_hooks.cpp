#include "nri/nri_hooks.h"
