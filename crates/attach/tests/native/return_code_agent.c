/* A minimal JVMTI agent for the attach tests: Agent_OnAttach returns the number given
 * as its options, so the test can check that load_agent reports that exact code. */
#include <stdlib.h>

__attribute__((visibility("default")))
int Agent_OnAttach(void *vm, char *options, void *reserved) {
    (void)vm;
    (void)reserved;
    return options ? atoi(options) : 0;
}
