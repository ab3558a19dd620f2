#include "nri/mux.h"
