#include "table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void table_init(struct table *t, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
}

void table_add(struct table *t, const char *fmt, ...)
{
	int n = t->ncells;
	if (n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->cell = realloc(t->cell, (size_t)t->cap * TABLE_CELL);
		if (!t->cell) {
			perror("zabench: table");
			exit(1);
		}
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->cell[n], TABLE_CELL, fmt, ap);
	va_end(ap);
	t->ncells++;
}

void table_print(const struct table *t, FILE *out)
{
	int width[32] = { 0 }, ncols = t->ncols < 32 ? t->ncols : 32;
	for (int i = 0; i < t->ncells; i++) {
		int len = (int)strlen(t->cell[i]);
		if (len > width[i % t->ncols])
			width[i % t->ncols] = len;
	}
	for (int i = 0; i < t->ncells; i++) {
		int c = i % t->ncols;
		if (c < ncols)
			fprintf(out, c ? "  %*s" : "%-*s", width[c], t->cell[i]);
		if (c == t->ncols - 1 || i == t->ncells - 1)
			fputc('\n', out);
	}
}

void table_free(struct table *t)
{
	free(t->cell);
	t->cell = NULL;
}
