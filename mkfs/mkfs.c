/* mkfs.lsmfs: being written. */
#include "fs.h"
int main(void) { return 1; }
