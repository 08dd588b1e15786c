#include "doc.h"

#include <stdlib.h>
#include <string.h>

static void escape(struct doc *d, const char *s)
{
	for (; *s; s++) {
		if (!d->html)
			fputs(*s == '|' ? "\\|" : (char[2]){ *s, 0 }, d->f);
		else if (*s == '<')
			fputs("&lt;", d->f);
		else if (*s == '>')
			fputs("&gt;", d->f);
		else if (*s == '&')
			fputs("&amp;", d->f);
		else
			fputc(*s, d->f);
	}
}

static const char style[] =
	"body{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222}"
	"table{border-collapse:collapse;margin:0.5em 0;font-size:0.9em}"
	"th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
	"th{background:#eee}pre{background:#f7f7f7;padding:0.6em;overflow-x:auto;font-size:0.8em}"
	"img{max-width:100%}td.better{background:#d8f0d8}td.worse{background:#f6d5d5}"
	"td.noise{color:#666}td.inconclusive{background:#fbefc8}";

void doc_begin(struct doc *d, const char *title)
{
	if (!d->html) {
		fprintf(d->f, "# %s\n\n", title);
		return;
	}
	fprintf(d->f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
	escape(d, title);
	fprintf(d->f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
	escape(d, title);
	fprintf(d->f, "</h1>\n");
}

void doc_end(struct doc *d)
{
	if (d->html)
		fprintf(d->f, "</body>\n</html>\n");
}

void doc_heading(struct doc *d, int level, const char *anchor, const char *text)
{
	if (!d->html) {
		fprintf(d->f, "%.*s %s\n\n", level, "######", text);
		return;
	}
	fprintf(d->f, "<h%d id=\"%s\">", level, anchor);
	escape(d, text);
	fprintf(d->f, "</h%d>\n", level);
}

void doc_para(struct doc *d, const char *text)
{
	if (!d->html) {
		fprintf(d->f, "%s\n\n", text);
		return;
	}
	fprintf(d->f, "<p>");
	escape(d, text);
	fprintf(d->f, "</p>\n");
}

/* A verdict cell gets its colour in HTML. */
static const char *cell_class(const char *cell)
{
	static const char *const verdicts[][2] = {
		{ "better", "better" }, { "worse", "worse" }, { "within noise", "noise" },
		{ "inconclusive", "inconclusive" },
	};
	for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
		if (!strcmp(cell, verdicts[i][0]))
			return verdicts[i][1];
	return NULL;
}

static void row(struct doc *d, const char *const *cells, const char *tag)
{
	if (!d->html) {
		for (int i = 0; i < d->ncols; i++) {
			fputs("| ", d->f);
			escape(d, cells[i]);
			fputc(' ', d->f);
		}
		fputs("|\n", d->f);
		return;
	}
	fputs("<tr>", d->f);
	for (int i = 0; i < d->ncols; i++) {
		const char *cls = cell_class(cells[i]);
		if (cls)
			fprintf(d->f, "<%s class=\"%s\">", tag, cls);
		else
			fprintf(d->f, "<%s>", tag);
		escape(d, cells[i]);
		fprintf(d->f, "</%s>", tag);
	}
	fputs("</tr>\n", d->f);
}

void doc_table_begin(struct doc *d, int ncols, const char *const *header)
{
	d->ncols = ncols;
	if (d->html)
		fputs("<table>\n", d->f);
	row(d, header, "th");
	if (!d->html) {
		for (int i = 0; i < ncols; i++)
			fputs("|---", d->f);
		fputs("|\n", d->f);
	}
}

void doc_table_row(struct doc *d, const char *const *cells)
{
	row(d, cells, "td");
}

void doc_table_end(struct doc *d)
{
	fputs(d->html ? "</table>\n" : "\n", d->f);
}

static FILE *open_in_dir(const struct doc *d, const char *name)
{
	char path[1280];
	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	return fopen(path, "rb");
}

void doc_pre_file(struct doc *d, const char *name)
{
	FILE *in = open_in_dir(d, name);
	char line[4096];
	fputs(d->html ? "<pre>" : "```text\n", d->f);
	while (in && fgets(line, sizeof(line), in)) {
		if (d->html)
			escape(d, line);
		else
			fputs(line, d->f);
	}
	fputs(d->html ? "</pre>\n" : "```\n\n", d->f);
	if (in)
		fclose(in);
}

static void base64(FILE *in, FILE *out)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char b[3];
	size_t n;
	while ((n = fread(b, 1, 3, in)) > 0) {
		unsigned v = (unsigned)b[0] << 16 | (n > 1 ? (unsigned)b[1] << 8 : 0) | (n > 2 ? b[2] : 0);
		fputc(abc[v >> 18 & 63], out);
		fputc(abc[v >> 12 & 63], out);
		fputc(n > 1 ? abc[v >> 6 & 63] : '=', out);
		fputc(n > 2 ? abc[v & 63] : '=', out);
	}
}

void doc_image(struct doc *d, const char *name, const char *alt)
{
	if (!d->html) {
		fprintf(d->f, "![%s](%s)\n\n", alt, name);
		return;
	}
	FILE *in = open_in_dir(d, name);
	if (!in)
		return;
	fputs("<p><img alt=\"", d->f);
	escape(d, alt);
	fputs("\" src=\"data:image/png;base64,", d->f);
	base64(in, d->f);
	fputs("\"></p>\n", d->f);
	fclose(in);
}
