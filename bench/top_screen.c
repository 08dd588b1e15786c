/*
 * zabench top's full-screen view (ncurses, when built with it): the view
 * redrawn every interval; o s b v z p switch views, m a n sort the slab
 * caches (memory, objects, name), j k and the arrows scroll, q quits.
 */
#include "top.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef ZA_HAVE_CURSES
#include <curses.h>

const bool top_screen_built = true;

/* The view as text, its lines from `scroll` on, as many as fit. */
static void paint(const struct top_sample *s, enum top_view v, enum top_sort sort, int *scroll)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return;
	top_draw(f, s, v, sort);
	fclose(f);
	int lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	if (*scroll > lines - (LINES - 2))
		*scroll = lines - (LINES - 2) > 0 ? lines - (LINES - 2) : 0;
	erase();
	int row = 0, line = 0;
	for (char *p = text, *nl; p && *p && row < LINES - 1; p = nl ? nl + 1 : NULL, line++) {
		nl = strchr(p, '\n');
		if (line && line < *scroll)
			continue;       /* the first line, the title, stays */
		int n = (int)(nl ? nl - p : (ptrdiff_t)strlen(p));
		mvaddnstr(row++, 0, p, n < COLS ? n : COLS);
	}
	attron(A_REVERSE);
	mvaddnstr(LINES - 1, 0, " o overview  s slabs  b buddyinfo  v vmstat  z zoneinfo  "
				"p pagetypeinfo  m/a/n sort  j/k scroll  q quit ", COLS);
	attroff(A_REVERSE);
	refresh();
	free(text);
}

static bool view_key(int c, enum top_view *v)
{
	for (int i = 0; i < NR_VIEWS; i++)
		if (c == top_view_keys[i]) {
			*v = (enum top_view)i;
			return true;
		}
	return false;
}

bool top_screen(struct top_sample *s, double interval, bool (*next)(struct top_sample *))
{
	if (!newterm(NULL, stdout, stdin))
		return false;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	timeout((int)(interval * 1000));
	enum top_view v = VIEW_OVERVIEW;
	enum top_sort sort = SORT_MEMORY;
	int scroll = 0;
	bool alive = true;
	for (int c = 0; alive && c != 'q';) {
		paint(s, v, sort, &scroll);
		c = getch();
		if (c == ERR)
			alive = next(s);
		else if (view_key(c, &v))
			scroll = 0;
		else if (c == 'm' || c == 'a' || c == 'n')
			sort = c == 'm' ? SORT_MEMORY : c == 'a' ? SORT_OBJECTS : SORT_NAME;
		else if (c == 'j' || c == KEY_DOWN || c == ' ' || c == KEY_NPAGE)
			scroll += c == 'j' || c == KEY_DOWN ? 1 : LINES - 2;
		else if ((c == 'k' || c == KEY_UP || c == KEY_PPAGE) && scroll > 0)
			scroll -= c == KEY_PPAGE ? (scroll < LINES - 2 ? scroll : LINES - 2) : 1;
	}
	endwin();
	return true;
}

#else

const bool top_screen_built = false;

bool top_screen(struct top_sample *s, double interval, bool (*next)(struct top_sample *))
{
	(void)s;
	(void)interval;
	(void)next;
	fprintf(stderr, "zabench top: built without ncurses, so no full-screen view (apt-get install "
			"libncurses-dev, then make); a line per interval instead\n");
	return false;
}

#endif
