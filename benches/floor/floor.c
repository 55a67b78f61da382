/* The floor under jscope's trace probes: a JNI static native (I)V that reads the
 * TSC and stores it with the probe id in a small ring, which is the least a
 * probe must do. Two of them around an empty method cost what two JNI
 * transitions and two TSC reads cost on this machine (benches/probes.sh). */
#include <jni.h>
#include <x86intrin.h>

static unsigned long long ring[4096];
static unsigned int head;

static void stamp(jint id) {
    unsigned int at = head++ & 4095;
    ring[at] = __rdtsc() ^ (unsigned long long)id;
}

JNIEXPORT void JNICALL Java_Floor_enter(JNIEnv *env, jclass cls, jint id) { stamp(id); }
JNIEXPORT void JNICALL Java_Floor_exit(JNIEnv *env, jclass cls, jint id) { stamp(id); }

/* Empty natives: what the two JNI transitions alone cost. */
JNIEXPORT void JNICALL Java_Floor_enterEmpty(JNIEnv *env, jclass cls, jint id) {}
JNIEXPORT void JNICALL Java_Floor_exitEmpty(JNIEnv *env, jclass cls, jint id) {}
