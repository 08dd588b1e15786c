/*
 * The C library's allocation functions and the C++ operators, by their
 * own names, for libzonealloc-malloc.so: included by malloc.c when it is
 * built with ZA_MALLOC_OVERRIDE, so that the aliases and the functions
 * they name are one translation unit (an alias must be defined beside its
 * target), as mimalloc's alloc-override.c is.  Not compiled on its own.
 */
#define ALIAS(name) __attribute__((alias(#name), visibility("default")))

void *malloc(size_t n) ALIAS(za_malloc);
void free(void *p) ALIAS(za_free);
void *calloc(size_t count, size_t size) ALIAS(za_calloc);
void *realloc(void *p, size_t n) ALIAS(za_realloc);
void *reallocarray(void *p, size_t count, size_t size) ALIAS(za_reallocarray);
void *memalign(size_t align, size_t n) ALIAS(za_memalign);
void *aligned_alloc(size_t align, size_t n) ALIAS(za_aligned_alloc);
int posix_memalign(void **out, size_t align, size_t n) ALIAS(za_posix_memalign);
void *valloc(size_t n) ALIAS(za_valloc);
void *pvalloc(size_t n) ALIAS(za_pvalloc);
size_t malloc_usable_size(void *p) ALIAS(za_malloc_usable_size);
void free_sized(void *p, size_t n) ALIAS(za_free_sized);
void free_aligned_sized(void *p, size_t align, size_t n) ALIAS(za_free_aligned_sized);
int malloc_trim(size_t pad) ALIAS(za_malloc_trim);
__attribute__((visibility("default"))) struct mallinfo2 mallinfo2(void)
{
	return za_mallinfo2();
}

__attribute__((visibility("default"))) struct mallinfo mallinfo(void)
{
	return za_mallinfo();
}

/*
 * C++: operator new and delete by their (Itanium ABI, LP64) names, so the
 * library needs no C++ runtime.  A failing new calls the program's
 * new_handler until it gives up, then throws std::bad_alloc through the
 * C++ runtime's own function; both are weak references, present whenever
 * the program is C++ (the only case in which these are called).
 */
typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

static void *cxx_new(size_t n, size_t align, bool nothrow)
{
	for (;;) {
		void *p = align > MALLOC_ALIGN ? za_memalign(align, n) : za_malloc(n);
		if (p)
			return p;
		new_handler_fn handler = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
		if (handler)
			handler();
		else if (nothrow)
			return NULL;
		else if (_ZSt17__throw_bad_allocv)
			_ZSt17__throw_bad_allocv();
		else
			malloc_misuse("operator new(%zu): out of memory", n);
	}
}

/* C++'s delete with an alignment and no size. */
static void free_aligned(void *p, size_t align)
{
	if (p && ((uintptr_t)p & (align - 1)))
		malloc_misuse("delete(%p, align %zu): not aligned as the allocation was", p, align);
	za_free(p);
}

#define NEW(name, ...) void *name(__VA_ARGS__) __attribute__((visibility("default")))
#define DELETE(name, ...) void name(__VA_ARGS__) __attribute__((visibility("default")))
typedef struct nothrow_t nothrow_t;
NEW(_Znwm, size_t n);
NEW(_Znam, size_t n);
NEW(_ZnwmRKSt9nothrow_t, size_t n, const nothrow_t *nt);
NEW(_ZnamRKSt9nothrow_t, size_t n, const nothrow_t *nt);
NEW(_ZnwmSt11align_val_t, size_t n, size_t align);
NEW(_ZnamSt11align_val_t, size_t n, size_t align);
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, size_t n, size_t align, const nothrow_t *nt);
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, size_t n, size_t align, const nothrow_t *nt);
DELETE(_ZdlPv, void *p);
DELETE(_ZdaPv, void *p);
DELETE(_ZdlPvm, void *p, size_t n);
DELETE(_ZdaPvm, void *p, size_t n);
DELETE(_ZdlPvSt11align_val_t, void *p, size_t align);
DELETE(_ZdaPvSt11align_val_t, void *p, size_t align);
DELETE(_ZdlPvmSt11align_val_t, void *p, size_t n, size_t align);
DELETE(_ZdaPvmSt11align_val_t, void *p, size_t n, size_t align);
DELETE(_ZdlPvRKSt9nothrow_t, void *p, const nothrow_t *nt);
DELETE(_ZdaPvRKSt9nothrow_t, void *p, const nothrow_t *nt);
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, void *p, size_t align, const nothrow_t *nt);
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, void *p, size_t align, const nothrow_t *nt);

void *_Znwm(size_t n) { return cxx_new(n, 0, false); }
void *_Znam(size_t n) { return cxx_new(n, 0, false); }
void *_ZnwmRKSt9nothrow_t(size_t n, const nothrow_t *nt) { (void)nt; return cxx_new(n, 0, true); }
void *_ZnamRKSt9nothrow_t(size_t n, const nothrow_t *nt) { (void)nt; return cxx_new(n, 0, true); }
void *_ZnwmSt11align_val_t(size_t n, size_t a) { return cxx_new(n, a, false); }
void *_ZnamSt11align_val_t(size_t n, size_t a) { return cxx_new(n, a, false); }
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *nt)
{
	(void)nt;
	return cxx_new(n, a, true);
}
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *nt)
{
	(void)nt;
	return cxx_new(n, a, true);
}
void _ZdlPv(void *p) { za_free(p); }
void _ZdaPv(void *p) { za_free(p); }
void _ZdlPvm(void *p, size_t n) { za_free_sized(p, n); }
void _ZdaPvm(void *p, size_t n) { za_free_sized(p, n); }
void _ZdlPvSt11align_val_t(void *p, size_t a) { free_aligned(p, a); }
void _ZdaPvSt11align_val_t(void *p, size_t a) { free_aligned(p, a); }
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { za_free_aligned_sized(p, a, n); }
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { za_free_aligned_sized(p, a, n); }
void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_t *nt) { (void)nt; za_free(p); }
void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_t *nt) { (void)nt; za_free(p); }
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *nt)
{
	(void)nt;
	free_aligned(p, a);
}
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *nt)
{
	(void)nt;
	free_aligned(p, a);
}
