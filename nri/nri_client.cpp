#include "nri/nri_client.h"
