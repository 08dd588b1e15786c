/*
 * Which sanitizer the build runs under: ZA_TSAN, ZA_ASAN.  gcc says so by
 * macro, clang by __has_feature.  Macros only, so that the tests, which see
 * nothing else of src/, share it (tests/test.h).
 */
#ifndef ZA_SANITIZERS_H
#define ZA_SANITIZERS_H

#if defined(__SANITIZE_THREAD__)
#define ZA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZA_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ZA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZA_ASAN 1
#endif
#endif

#endif
