/* The JNI library of the walker fixture: Java_Hot_callBack calls the Java
 * method Hot.fromNative back through JNI n times. Built by the test. */
#include <jni.h>

JNIEXPORT jlong JNICALL Java_Hot_callBack(JNIEnv *env, jclass cls, jlong n) {
    jmethodID m = (*env)->GetStaticMethodID(env, cls, "fromNative", "(J)J");
    if (m == NULL) {
        return 0;
    }
    jlong acc = 0;
    for (jlong i = 0; i < n; i++) {
        acc += (*env)->CallStaticLongMethod(env, cls, m, acc + i);
        if ((*env)->ExceptionCheck(env)) {
            return acc;
        }
    }
    return acc;
}
