/* The JNI library of the native-stack tests, built by the test with gcc
 * -fno-omit-frame-pointer: Mixed.spinNative burns CPU in C for a while, and
 * MallocThreads.run starts threads of its own that live in malloc. */
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

/* MallocThreads.run: threads of the library's own, which never touch the JVM,
 * each spending its CPU time in malloc, realloc and free, one after another. */
#include <pthread.h>
#include <stdlib.h>

__attribute__((noinline)) void *jscope_malloc_loop(void *arg) {
    double end = thread_cpu_ms() + (double)(long)arg;
    volatile long sink = 0;
    while (thread_cpu_ms() < end) {
        for (int i = 0; i < 2000; i++) {
            char *p = malloc(64 + (i % 512));
            char *q = realloc(p, 4096 + i);
            if (q != NULL) {
                q[0] = (char)i;
                sink += q[0];
                p = q;
            }
            free(p);
        }
    }
    return NULL;
}

JNIEXPORT jint JNICALL Java_MallocThreads_run(JNIEnv *env, jclass cls, jint threads, jlong millis) {
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, jscope_malloc_loop, (void *)(long)millis) != 0) {
            return i;
        }
        pthread_join(t, NULL);
    }
    return threads;
}
