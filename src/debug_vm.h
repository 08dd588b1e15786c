/*
 * Executable invariants (the kernel's mmdebug.h).  With ZA_DEBUG_VM (CMake
 * -DZA_DEBUG_VM=ON, on in the sanitizer builds of .ci/run) a broken
 * invariant is reported where it breaks -- file, line and the condition,
 * through the system's error handler -- and the process aborts.  Without
 * it the checks compile to nothing: their operands are not evaluated.
 */
#ifndef ZA_DEBUG_VM_H
#define ZA_DEBUG_VM_H

struct za_mm;
struct za_page;

#ifdef ZA_DEBUG_VM
void za__vm_bug(const struct za_mm *mm, const char *file, int line, const char *cond,
		const struct za_page *page) __attribute__((noreturn, cold));

/* cond must not hold; mm (may be NULL) says whose error handler hears it. */
#define VM_BUG_ON(mm, cond)                                                     \
	do {                                                                    \
		if (__builtin_expect(!!(cond), 0))                              \
			za__vm_bug((mm), __FILE__, __LINE__, #cond, NULL);      \
	} while (0)

/* The same, naming the page descriptor it is about: pfn, flags, order,
 * migratetype (the kernel's VM_BUG_ON_PAGE). */
#define VM_BUG_ON_PAGE(mm, cond, page)                                          \
	do {                                                                    \
		if (__builtin_expect(!!(cond), 0))                              \
			za__vm_bug((mm), __FILE__, __LINE__, #cond, (page));    \
	} while (0)
#else
#define VM_BUG_ON(mm, cond)                                                     \
	do {                                                                    \
		if (0) {                                                        \
			(void)(mm);                                             \
			(void)(cond);                                           \
		}                                                               \
	} while (0)
#define VM_BUG_ON_PAGE(mm, cond, page)                                          \
	do {                                                                    \
		if (0) {                                                        \
			(void)(mm);                                             \
			(void)(cond);                                           \
			(void)(page);                                           \
		}                                                               \
	} while (0)
#endif

/* za_verify's checks, in every layer's verify hook: a broken invariant is
 * recorded ("verify: ...", za_last_error) and the hook returns -1, letting
 * go of its locks on the way out; za_verify reports it then, so that no
 * error handler runs under the allocator's locks (it may allocate). */
#define VERIFY(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			za_set_last_error("verify: " __VA_ARGS__);             \
			return -1;                                             \
		}                                                              \
	} while (0)

#endif /* ZA_DEBUG_VM_H */
