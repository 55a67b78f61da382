/* The C side of MallocBench.java: allocator churn with a ring of live blocks. */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LIVE 4096

static uint32_t next(uint32_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* Uses a block as code does: fills it and reads it back. */
static jlong use(unsigned char *p, size_t size, uint32_t r) {
    memset(p, (int)r, size);
    jlong sum = 0;
    for (size_t i = 0; i < size; i += 64) sum += p[i];
    return sum;
}

/* Works on a block as a parser or codec would: fills it, then hashes every byte. */
static jlong compute(unsigned char *p, size_t size, uint32_t r) {
    memset(p, (int)r, size);
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 1099511628211u;
    return (jlong)(h & 1);
}

/* work: 0 none (the allocator alone), 1 touch (fill and read back), 2 compute
 * (small blocks, each filled and hashed byte by byte). */
JNIEXPORT jlong JNICALL Java_MallocBench_churn(JNIEnv *env, jclass cls, jint rounds, jint seed,
                                               jint work) {
    void *live[LIVE] = {0};
    uint32_t x = (uint32_t)seed * 2654435761u;
    jlong bytes = 0;
    for (int i = 0; i < rounds; i++) {
        uint32_t r = next(&x);
        size_t size = 16 + (r >> 8) % (work == 2 ? 1024 : r & 0x100 ? 16384 : 512);
        int slot = (int)(r % LIVE);
        void *p;
        switch (r & 3) {
        case 0:
            p = calloc(1, size);
            break;
        case 1:
            p = realloc(live[slot], size);
            live[slot] = NULL;
            break;
        default:
            p = malloc(size);
            memset(p, (int)r, size < 256 ? size : 256);
            break;
        }
        free(live[slot]);
        live[slot] = p;
        if (work == 1) bytes += use(p, size, r) & 1;
        if (work == 2) bytes += compute(p, size, r);
        bytes += (jlong)size;
    }
    for (int i = 0; i < LIVE; i++) free(live[i]);
    return bytes;
}
