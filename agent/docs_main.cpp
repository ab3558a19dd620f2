// koordlet-docs: placeholder until the generator lands.
#include <cstdio>
int main() {
  std::fprintf(stderr, "koordlet-docs: not written yet\n");
  return 1;
}
