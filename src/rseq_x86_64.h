/*
 * The restartable sections of rseq.h for x86-64.
 *
 * Layout of every section (labels are the assembler's local ones):
 *   entry   rseq_cs = the section's descriptor (9:), so that the kernel
 *           knows, if it interrupts us, where the section is and where its
 *           abort handler is.  Not part of the section: harmless to redo.
 *   1:      start.  Read the index (cpu_id or mm_cid) from the rseq area,
 *           find the stack, read the stop word, head and tally.  Every load
 *           here is redone from scratch after an abort, so none of them can
 *           be stale when the commit runs: between 1: and the commit, no
 *           other thread ran on this CPU (it would have preempted us) and no
 *           other CPU writes the stack (only its index and a stopper do, and
 *           a stopper fences first).
 *           Stores before the commit go only to memory the caller owns (the
 *           successor word of the element being pushed), so redoing them is
 *           harmless and leaving them done after an abort changes nothing
 *           anyone reads.
 *           The commit: one movdqa of {head, tally}.  An interrupt lands
 *           between instructions, so the pair is written entirely or not.
 *   3:      post-commit: the section's end.  Status OK.
 *   4:      abort handler, after the signature (ud1 with RSEQ_SIG as its
 *           displacement, so that disassemblers see an instruction): status
 *           ABORTED.
 *   5:      fail (nothing written): status FAIL.  6: MISMATCH.
 * The kernel clears rseq_cs itself when it finds the instruction pointer
 * outside the section, so nothing disarms it.
 */
#ifndef ZA_RSEQ_X86_64_H
#define ZA_RSEQ_X86_64_H

#define RSEQ_SIG 0x53053053u
#define RSEQ_SIG_STR "0x53053053"

/* Arm, and read the index into addr (zero-extended). */
#define RSEQ_ASM_ENTER                                                  \
	"leaq 9f(%%rip), %[addr]\n\t"                                   \
	"movq %[cs], %[st]\n\t"                                         \
	"movq %[addr], %%fs:(%[st])\n\t"                                \
	"1:\n\t"                                                        \
	"movq %[idx], %[st]\n\t"                                        \
	"movl %%fs:(%[st]), %k[addr]\n\t"

/* The index's stack (fail when stopped), its head and tally. */
#define RSEQ_ASM_STACK                                                  \
	"shlq %b[shift], %[addr]\n\t"                                  \
	"addq %[base], %[addr]\n\t"                                     \
	"cmpl $0, (%[addr],%[stop])\n\t"                                \
	"jne 5f\n\t"                                                    \
	"movq (%[addr]), %[head]\n\t"                                   \
	"movq 8(%[addr]), %[t]\n\t"

/* The same, failing for an index beyond nr. */
#define RSEQ_ASM_LOCATE                                                 \
	"cmpl %[nr], %k[addr]\n\t"                                      \
	"jae 5f\n\t"                                                    \
	RSEQ_ASM_STACK

/* t += delta, failing if a bit of the mask is then set. */
#define RSEQ_ASM_TALLY                                                  \
	"addq %[delta], %[t]\n\t"                                       \
	"testq %[fail], %[t]\n\t"                                       \
	"jnz 5f\n\t"

/* The commit of {h, tl}, the end, the abort handler, the exits and the
 * descriptor {version 0, flags 0, start 1:, length 3: - 1:, abort 4:}. */
#define RSEQ_ASM_COMMIT(h, tl)                                          \
	"movq %[" h "], %%xmm0\n\t"                                     \
	"movq %[" tl "], %%xmm1\n\t"                                    \
	"punpcklqdq %%xmm1, %%xmm0\n\t"                                 \
	"movdqa %%xmm0, (%[addr])\n\t"                                  \
	"3:\n\t"                                                        \
	"xorl %k[st], %k[st]\n\t"                                       \
	"jmp 8f\n\t"                                                    \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                    \
	".long " RSEQ_SIG_STR "\n\t"                                    \
	"4:\n\t"                                                        \
	"movl $2, %k[st]\n\t"                                           \
	"jmp 8f\n\t"                                                    \
	"5:\n\t"                                                        \
	"movl $1, %k[st]\n\t"                                           \
	"jmp 8f\n\t"                                                    \
	"6:\n\t"                                                        \
	"movl $3, %k[st]\n\t"                                           \
	"8:\n\t"                                                        \
	".pushsection __rseq_cs, \"aw\"\n\t"                            \
	".balign 32\n\t"                                                \
	"9:\n\t"                                                        \
	".long 0, 0\n\t"                                                \
	".quad 1b, 3b - 1b, 4b\n\t"                                     \
	".popsection\n\t"

/* Decode the successor word at nx (a slot address) in place: the hardened
 * form, then its range check against the {base, span} pair at lk->range
 * from the stack.  st is free here. */
#define RSEQ_ASM_DECODE                                                 \
	"movq %[nx], %[st]\n\t"                                         \
	"movq (%[nx]), %[nx]\n\t"                                       \
	"bswapq %[st]\n\t"                                              \
	"andq 16(%[lk]), %[st]\n\t"                                     \
	"xorq %[st], %[nx]\n\t"                                         \
	"xorq 8(%[lk]), %[nx]\n\t"                                      \
	"testq %[nx], %[nx]\n\t"                                        \
	"jz 2f\n\t"                                                     \
	"movq 24(%[lk]), %[st]\n\t"                                     \
	"addq %[addr], %[st]\n\t"                                       \
	"subq (%[st]), %[nx]\n\t"                                       \
	"cmpq 8(%[st]), %[nx]\n\t"                                      \
	"jae 6f\n\t"                                                    \
	"addq (%[st]), %[nx]\n\t"                                       \
	"2:\n\t"

/* pop: a head to take, and the tally. */
#define RSEQ_ASM_POP_CHECKS                                             \
	"testq %[head], %[head]\n\t"                                    \
	"jz 5f\n\t"                                                     \
	RSEQ_ASM_TALLY

/* push: first is not the head (FAIL), the guard holds (MISMATCH), the tally. */
#define RSEQ_ASM_PUSH_TOP                                               \
	"cmpq %[first], %[head]\n\t"                                    \
	"je 5f\n\t"
#define RSEQ_ASM_PUSH_CHECKS                                            \
	RSEQ_ASM_PUSH_TOP                                               \
	"movq %[t], %[nx]\n\t"                                          \
	"andq %[gmask], %[nx]\n\t"                                      \
	"cmpq %[guard], %[nx]\n\t"                                      \
	"jne 6f\n\t"                                                    \
	RSEQ_ASM_TALLY

#define RSEQ_ASM_PUSH_INPUTS                                            \
	[first] "r"(first), [last] "r"(last), [delta] "rme"(delta), [fail] "rm"(fail), \
	[gmask] "rm"(guard_mask), [guard] "rm"(guard)

#define RSEQ_ASM_OUTPUTS                                                \
	[addr] "=&r"(addr), [head] "=&r"(head), [t] "=&r"(t), [nx] "=&r"(nx), [st] "=&r"(st)

/* The shift an immediate when the caller's is a constant (the fronts'),
 * which leaves rcx to the compiler. */
#define RSEQ_ASM_PERCPU_INPUTS(pc)                                      \
	[base] "r"((pc)->base), [stop] "r"((pc)->stop), [shift] "ci"((pc)->shift), \
	[nr] "rm"((pc)->nr), [idx] "rm"((pc)->index_tls), [cs] "rm"(rseq_cs_tls)

#define RSEQ_ASM_CLOBBERS "xmm0", "xmm1", "cc", "memory"

static inline bool rseq_link_plain(const struct rseq_link *lk)
{
	return !lk->key && !lk->swap && !lk->range;
}

static inline __attribute__((always_inline)) int
rseq_pop(const struct rseq_percpu *pc, const struct rseq_link *lk, uint64_t delta, uint64_t fail,
	 void **out)
{
	uintptr_t addr, head, t, nx, st;
	if (rseq_link_plain(lk))
		__asm__ volatile(RSEQ_ASM_ENTER RSEQ_ASM_LOCATE
				 RSEQ_ASM_POP_CHECKS
				 "movq (%[head],%[off]), %[nx]\n\t"
				 RSEQ_ASM_COMMIT("nx", "t")
				 : RSEQ_ASM_OUTPUTS
				 : RSEQ_ASM_PERCPU_INPUTS(pc), [off] "r"(lk->off),
				   [delta] "rme"(delta), [fail] "rm"(fail)
				 : RSEQ_ASM_CLOBBERS);
	else
		__asm__ volatile(RSEQ_ASM_ENTER RSEQ_ASM_LOCATE
				 RSEQ_ASM_POP_CHECKS
				 "movq (%[lk]), %[nx]\n\t"
				 "addq %[head], %[nx]\n\t"
				 RSEQ_ASM_DECODE
				 RSEQ_ASM_COMMIT("nx", "t")
				 : RSEQ_ASM_OUTPUTS
				 : RSEQ_ASM_PERCPU_INPUTS(pc), [lk] "r"(lk),
				   [delta] "rme"(delta), [fail] "rm"(fail)
				 : RSEQ_ASM_CLOBBERS);
	(void)t, (void)nx;
	*out = (void *)head;
	return (int)st;
}

/*
 * Pushes first..last (linked already, last's successor written here) if
 * first is not the head (a double free of the top, left to the caller's
 * checks: FAIL) and (tally & guard_mask) == guard (slub.c: the object's
 * slab is the CPU slab; MISMATCH if not).
 */
static inline __attribute__((always_inline)) int
rseq_push(const struct rseq_percpu *pc, const struct rseq_link *lk, void *first, void *last,
	  uint64_t delta, uint64_t fail, uint64_t guard_mask, uint64_t guard)
{
	uintptr_t addr, head, t, nx, st;
	if (rseq_link_plain(lk) && __builtin_constant_p(guard_mask) && !guard_mask &&
	    __builtin_constant_p(guard) && !guard) {
		/* unguarded (the counted stacks): no guard operands, and the
		 * successor's slot one register */
		__asm__ volatile(RSEQ_ASM_ENTER RSEQ_ASM_LOCATE
				 RSEQ_ASM_PUSH_TOP RSEQ_ASM_TALLY
				 "movq %[head], (%[slot])\n\t"
				 RSEQ_ASM_COMMIT("first", "t")
				 : [addr] "=&r"(addr), [head] "=&r"(head), [t] "=&r"(t), [st] "=&r"(st)
				 : RSEQ_ASM_PERCPU_INPUTS(pc), [first] "r"(first),
				   [slot] "r"((char *)last + lk->off), [delta] "rme"(delta),
				   [fail] "rm"(fail)
				 : RSEQ_ASM_CLOBBERS);
		nx = 0;
	} else if (rseq_link_plain(lk))
		__asm__ volatile(RSEQ_ASM_ENTER RSEQ_ASM_LOCATE
				 RSEQ_ASM_PUSH_CHECKS
				 "movq %[head], (%[last],%[off])\n\t"
				 RSEQ_ASM_COMMIT("first", "t")
				 : RSEQ_ASM_OUTPUTS
				 : RSEQ_ASM_PERCPU_INPUTS(pc), [off] "r"(lk->off),
				   RSEQ_ASM_PUSH_INPUTS
				 : RSEQ_ASM_CLOBBERS);
	else
		__asm__ volatile(RSEQ_ASM_ENTER RSEQ_ASM_LOCATE
				 RSEQ_ASM_PUSH_CHECKS
				 /* encode head into last's slot: nx = slot */
				 "movq (%[lk]), %[nx]\n\t"
				 "addq %[last], %[nx]\n\t"
				 "movq %[nx], %[st]\n\t"
				 "bswapq %[st]\n\t"
				 "andq 16(%[lk]), %[st]\n\t"
				 "xorq 8(%[lk]), %[st]\n\t"
				 "xorq %[head], %[st]\n\t"
				 "movq %[st], (%[nx])\n\t"
				 RSEQ_ASM_COMMIT("first", "t")
				 : RSEQ_ASM_OUTPUTS
				 : RSEQ_ASM_PERCPU_INPUTS(pc), [lk] "r"(lk),
				   RSEQ_ASM_PUSH_INPUTS
				 : RSEQ_ASM_CLOBBERS);
	(void)head, (void)t, (void)nx;
	return (int)st;
}

/*
 * On index `index` only: takes the whole stack, leaving {NULL, 0}; *old
 * gets what was there.  Fails if the thread runs as another index, or the
 * index is stopped.
 */
static inline __attribute__((always_inline)) int
rseq_take(const struct rseq_percpu *pc, unsigned int index, struct rseq_stack *old)
{
	uintptr_t addr, head, t, nx, st;
	__asm__ volatile(RSEQ_ASM_ENTER
			 "cmpl %[want], %k[addr]\n\t"
			 "jne 5f\n\t"
			 RSEQ_ASM_STACK
			 "xorl %k[nx], %k[nx]\n\t"
			 RSEQ_ASM_COMMIT("nx", "nx")
			 : RSEQ_ASM_OUTPUTS
			 : RSEQ_ASM_PERCPU_INPUTS(pc), [want] "rm"(index)
			 : RSEQ_ASM_CLOBBERS);
	old->head = (void *)head;
	old->tally = t;
	return (int)st;
}

#endif /* ZA_RSEQ_X86_64_H */
