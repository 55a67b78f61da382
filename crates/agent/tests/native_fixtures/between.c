/* The JNI library of the between-frames test: Java_Between_outer calls the
 * Java method Between.callback back through JNI until the thread has used
 * the CPU time asked; callback calls Java_Between_spin, which spins in
 * spin_loop. Built by the test with gcc -O2. */
#include <jni.h>
#include <time.h>

volatile double between_sink;

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* noipa: neither inlined nor cloned, so it is a frame of its own. */
__attribute__((noipa)) double spin_loop(long n) {
    volatile double x = 0;
    for (long i = 0; i < n; i++) {
        x += i * 0.5;
    }
    return x;
}

JNIEXPORT jdouble JNICALL Java_Between_spin(JNIEnv *env, jclass cls, jlong n) {
    double r = spin_loop(n);
    between_sink += r; /* work after the call: a call, not a tail jump */
    return r;
}

JNIEXPORT void JNICALL Java_Between_outer(JNIEnv *env, jclass cls, jlong millis) {
    jmethodID callback = (*env)->GetStaticMethodID(env, cls, "callback", "()V");
    if (callback == NULL) {
        return;
    }
    double end = thread_cpu_ms() + (double)millis;
    while (thread_cpu_ms() < end) {
        (*env)->CallStaticVoidMethod(env, cls, callback);
        if ((*env)->ExceptionCheck(env)) {
            return;
        }
    }
}
