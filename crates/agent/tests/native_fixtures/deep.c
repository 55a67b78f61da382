/* The JNI library of the DWARF unwinding test, built by the test with gcc -O2
 * -fomit-frame-pointer, as distribution libraries are: Deep.deep calls a chain
 * of C functions none of which keeps a frame pointer, and spins in the last.
 * Only the unwind information (.eh_frame) says where each one's caller is. */
#include <jni.h>
#include <time.h>

volatile double deep_sink;

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* noipa: neither inlined nor cloned; the work after each call keeps it a call
 * (not a tail jump), so every function has a frame of its own. */
__attribute__((noipa)) double inner_spin(long n) {
    volatile double x = 0;
    for (long i = 0; i < n; i++) {
        x += i * 0.5;
    }
    return x;
}

__attribute__((noipa)) double middle_c(long n) {
    double r = inner_spin(n);
    deep_sink += r;
    return r * 2;
}

__attribute__((noipa)) double outer_c(long n) {
    double r = middle_c(n) + 1;
    deep_sink += r;
    return r;
}

JNIEXPORT jdouble JNICALL Java_Deep_deep(JNIEnv *env, jclass cls, jlong millis) {
    double end = thread_cpu_ms() + (double)millis;
    double sum = 0;
    while (thread_cpu_ms() < end) {
        sum += outer_c(2000000);
    }
    return sum;
}
