/* The JNI side of NativeMem.java: allocation paths with known totals, and a
 * pthread mutex two threads contend on. Built by the tests with cc, optimised
 * and without frame pointers, as distribution libraries are. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void *leak_block(size_t size) {
    void *p = malloc(size);
    if (p) memset(p, 1, size);
    return p;
}

JNIEXPORT jlong JNICALL Java_NativeMem_leak(JNIEnv *env, jclass cls, jint blocks, jint size) {
    jlong total = 0;
    for (int i = 0; i < blocks; i++) {
        sink = leak_block((size_t)size);
        total += size;
    }
    return total;
}

__attribute__((noinline)) static void churn_block(size_t size, int zeroed) {
    void *p = zeroed ? calloc(1, size) : malloc(size);
    if (p) ((volatile char *)p)[size - 1] = 1;
    sink = p;
    free(p);
}

JNIEXPORT jlong JNICALL Java_NativeMem_churn(JNIEnv *env, jclass cls, jint blocks) {
    jlong total = 0;
    for (int i = 0; i < blocks; i++) {
        /* 64..4031 bytes, 2048 on average: 256 MiB over 131072 blocks. */
        size_t size = 64 + (size_t)((i * 2654435761u) % 3968u);
        churn_block(size, i & 1);
        total += size;
    }
    return total;
}

__attribute__((noinline)) static void *grow_buffer(void *p, size_t size) {
    void *q = realloc(p, size);
    if (q) memset(q, 2, size);
    return q;
}

JNIEXPORT jlong JNICALL Java_NativeMem_grow(JNIEnv *env, jclass cls, jint chains, jint steps) {
    jlong total = 0;
    for (int c = 0; c < chains; c++) {
        void *p = NULL;
        size_t size = 1024;
        for (int s = 0; s < steps; s++, size *= 2) {
            p = grow_buffer(p, size);
            total += size;
        }
        free(p);
    }
    return total;
}

struct contention {
    pthread_mutex_t lock;
    int rounds;
    int hold_us;
    uint64_t blocked_ns[2];
};

static void hold(int us) {
    uint64_t until = now_ns() + (uint64_t)us * 1000u;
    while (now_ns() < until) {
    }
}

__attribute__((noinline)) static void contend_once(struct contention *c, int me) {
    /* A wait as the agent's hook sees one: the mutex was busy when asked for.
     * A preemption before that (a loaded machine) is no wait on the lock, and
     * counting it made the truth here a fifth over the agent's figure. */
    if (pthread_mutex_trylock(&c->lock) != 0) {
        uint64_t start = now_ns();
        pthread_mutex_lock(&c->lock);
        c->blocked_ns[me] += now_ns() - start;
    }
    hold(c->hold_us);
    pthread_mutex_unlock(&c->lock);
}

static void *contender(void *arg) {
    struct contention *c = arg;
    static int next;
    /* Real-time priority where allowed (root): a loaded machine then cannot
     * preempt the thread between its own clock reads and the agent's, which
     * put preemptions into the truth here that are no wait on the lock. */
    struct sched_param param = {.sched_priority = 1};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
    int me = __sync_fetch_and_add(&next, 1) & 1;
    for (int i = 0; i < c->rounds; i++) {
        contend_once(c, me);
        /* A pause after each release lets the waiting thread take the mutex, so
         * nearly every acquisition waits about a hold: the blocked time is
         * hundreds of milliseconds. */
        usleep(50);
    }
    return NULL;
}

JNIEXPORT jlong JNICALL Java_NativeMem_contend(JNIEnv *env, jclass cls, jint rounds, jint hold_us) {
    struct contention c = {PTHREAD_MUTEX_INITIALIZER, rounds, hold_us, {0, 0}};
    pthread_t a, b;
    pthread_create(&a, NULL, contender, &c);
    pthread_create(&b, NULL, contender, &c);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return (jlong)(c.blocked_ns[0] + c.blocked_ns[1]);
}

__attribute__((noinline)) static void *thread_leak_block(size_t size) {
    void *p = malloc(size);
    if (p) memset(p, 3, size);
    return p;
}

static void *native_leaker(void *arg) {
    for (int i = 0; i < 8192; i++) sink = thread_leak_block(1024);
    return NULL;
}

JNIEXPORT jlong JNICALL Java_NativeMem_nativeThreadLeak(JNIEnv *env, jclass cls) {
    pthread_t t;
    pthread_create(&t, NULL, native_leaker, NULL);
    pthread_join(t, NULL);
    return 8192 * 1024;
}

JNIEXPORT jint JNICALL Java_NativeMem_forkAndAllocate(JNIEnv *env, jclass cls) {
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 100000; i++) {
            void *p = malloc(64 + i % 4096);
            sink = p;
            free(p);
        }
        _exit(7);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct hammer {
    int millis;
    pthread_mutex_t lock;
    pthread_rwlock_t rw;
    long ops;
};

/* Every hooked function, over and over, until the time is up. */
static void *hammer_thread(void *arg) {
    struct hammer *h = arg;
    uint64_t until = now_ns() + (uint64_t)h->millis * 1000000u;
    long ops = 0;
    while (now_ns() < until) {
        for (int i = 0; i < 256; i++) {
            void *p = malloc(16 + (size_t)(i * 37) % 2048);
            p = realloc(p, 4096 + (size_t)i);
            void *q = calloc(4, 64);
            void *r = NULL;
            if (posix_memalign(&r, 64, 256) != 0) r = NULL;
            void *s = aligned_alloc(64, 512);
            pthread_mutex_lock(&h->lock);
            ops++;
            pthread_mutex_unlock(&h->lock);
            pthread_rwlock_rdlock(&h->rw);
            pthread_rwlock_unlock(&h->rw);
            pthread_rwlock_wrlock(&h->rw);
            pthread_rwlock_unlock(&h->rw);
            free(p);
            free(q);
            free(r);
            free(s);
        }
    }
    __sync_fetch_and_add(&h->ops, ops);
    return NULL;
}

JNIEXPORT jlong JNICALL Java_NativeMem_hammer(JNIEnv *env, jclass cls, jint threads, jint millis) {
    struct hammer h = {millis, PTHREAD_MUTEX_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER, 0};
    pthread_t t[16];
    int n = threads < 16 ? threads : 16;
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, hammer_thread, &h);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return h.ops;
}

/* The file name of the library whose malloc the process calls. */
JNIEXPORT jstring JNICALL Java_NativeMem_allocator(JNIEnv *env, jclass cls) {
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, "malloc");
    if (!f || !dladdr(f, &info) || !info.dli_fname) return (*env)->NewStringUTF(env, "?");
    const char *name = info.dli_fname;
    for (const char *p = name; *p; p++)
        if (*p == '/') name = p + 1;
    return (*env)->NewStringUTF(env, name);
}
