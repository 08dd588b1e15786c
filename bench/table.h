/*
 * Text tables whose columns fit their widest cell, so that nothing shifts
 * when a value grows a digit: cells are collected, then printed aligned
 * (the first column to the left, the others to the right).
 */
#ifndef ZABENCH_TABLE_H
#define ZABENCH_TABLE_H

#include <stdio.h>

#define TABLE_CELL 64

struct table {
	int ncols, ncells, cap;         /* cells, row after row */
	char (*cell)[TABLE_CELL];
};

void table_init(struct table *t, int ncols);
/* Appends a cell to the current row; a row is full after ncols cells. */
void table_add(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_print(const struct table *t, FILE *out);
void table_free(struct table *t);

#endif
