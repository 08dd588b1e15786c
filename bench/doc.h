/*
 * The report as a document written once and rendered twice: Markdown
 * (report.md) and one self-contained HTML page (report.html, its plots
 * embedded), from the same calls.
 */
#ifndef ZABENCH_DOC_H
#define ZABENCH_DOC_H

#include <stdbool.h>
#include <stdio.h>

struct doc {
	FILE *f;
	bool html;
	const char *dir;        /* where the plots and text tables are */
	int ncols;              /* of the table being written */
};

void doc_begin(struct doc *d, const char *title);
void doc_end(struct doc *d);
void doc_heading(struct doc *d, int level, const char *anchor, const char *text);
/* A paragraph; in Markdown as is, in HTML escaped. */
void doc_para(struct doc *d, const char *text);
void doc_table_begin(struct doc *d, int ncols, const char *const *header);
void doc_table_row(struct doc *d, const char *const *cells);
void doc_table_end(struct doc *d);
/* The text file dir/name, preformatted. */
void doc_pre_file(struct doc *d, const char *name);
/* The PNG dir/name: linked from Markdown, embedded in HTML. */
void doc_image(struct doc *d, const char *name, const char *alt);

#endif
