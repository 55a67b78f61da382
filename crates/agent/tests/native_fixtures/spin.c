/* The JNI library of the native-stack tests, built by the test with gcc
 * -fno-omit-frame-pointer: Mixed.spinNative burns CPU in C for a while. */
#include <jni.h>
#include <time.h>

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Exported, so every symbolizer names it. */
__attribute__((noinline)) double jscope_spin_burn(long n) {
    volatile double x = 0;
    for (long i = 0; i < n; i++) {
        x += i * 0.5;
    }
    return x;
}

JNIEXPORT jdouble JNICALL Java_Mixed_spinNative(JNIEnv *env, jclass cls, jlong millis) {
    double end = thread_cpu_ms() + (double)millis;
    double sum = 0;
    while (thread_cpu_ms() < end) {
        sum += jscope_spin_burn(200000);
    }
    return sum;
}
