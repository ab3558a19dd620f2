#include "nri/plugin_session.h"
