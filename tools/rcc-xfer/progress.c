/* SPDX-License-Identifier: BSD-3-Clause */
#include "progress.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "output.h"
#include "stats.h"

#define BAR_PERIOD_NS 100000000ull /* 10 redraws a second */
#define JSON_PERIOD_NS 500000000ull

static bool bar_visible;

/* Called with the output lock held. */
static void erase_bar(void)
{
	if (bar_visible) {
		fputs("\r\033[K", stderr);
		bar_visible = false;
	}
}

const char *fmt_duration(double s, char *buf, size_t len)
{
	unsigned long t = s < 0 ? 0 : (unsigned long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
	return buf;
}

static int term_width(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col;
	return 80;
}

void progress_begin(struct progress *p, enum progress_mode mode, const char *name, uint64_t total,
		    uint64_t already)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	snprintf(p->name, sizeof(p->name), "%s", name);
	json_str(name, p->json_name, sizeof(p->json_name));
	p->total = total;
	p->start = p->done = already;
	p->t0_ns = mono_ns();
	if (mode == PROGRESS_BAR)
		out_set_eraser(erase_bar);
}

static void draw_bar(struct progress *p, uint64_t now)
{
	char done_s[32], total_s[32], rate_s[32], eta_s[32], line[512];
	double secs = (double)(now - p->t0_ns) / 1e9;
	double rate = secs > 0 ? (double)(p->done - p->start) / secs : 0;
	int pct = p->total ? (int)(p->done * 100 / p->total) : 100;
	int width = term_width(), bar, fill, n;

	fmt_bytes(p->done, done_s, sizeof(done_s));
	fmt_bytes(p->total, total_s, sizeof(total_s));
	fmt_rate(rate, rate_s, sizeof(rate_s));
	if (rate > 0 && p->total > p->done)
		fmt_duration((double)(p->total - p->done) / rate, eta_s, sizeof(eta_s));
	else
		snprintf(eta_s, sizeof(eta_s), "--:--");
	/* name, percent, [bar], sizes, rate, ETA: the bar takes what is left. */
	char tail[160];
	snprintf(tail, sizeof(tail), " %s / %s  %s  ETA %s", done_s, total_s, rate_s, eta_s);
	int name_w = width / 4 < 24 ? width / 4 : 24;
	bar = width - 1 - name_w - 6 - 2 - (int)strlen(tail);
	if (bar < 10)
		bar = 10;
	if (bar > 50)
		bar = 50;
	fill = bar * pct / 100;
	n = snprintf(line, sizeof(line), "\r%-*.*s %3d%% [", name_w, name_w, p->name, pct);
	for (int i = 0; i < bar && n < (int)sizeof(line) - 2; i++)
		line[n++] = i < fill ? '#' : '.';
	line[n] = 0;
	out_lock();
	fprintf(stderr, "%s]%s\033[K", line, tail);
	fflush(stderr);
	bar_visible = true;
	out_unlock();
}

void progress_update(struct progress *p, uint64_t done)
{
	uint64_t now;

	p->done = done;
	if (p->mode == PROGRESS_NONE)
		return;
	now = mono_ns();
	if (now - p->last_ns < (p->mode == PROGRESS_BAR ? BAR_PERIOD_NS : JSON_PERIOD_NS))
		return;
	p->last_ns = now;
	if (p->mode == PROGRESS_BAR)
		draw_bar(p, now);
	else
		out_json("{\"event\":\"progress\",\"name\":%s,\"bytes\":%llu,\"size\":%llu}",
			 p->json_name, (unsigned long long)p->done, (unsigned long long)p->total);
}

void progress_end(struct progress *p)
{
	if (p->mode == PROGRESS_BAR) {
		out_lock();
		erase_bar();
		fflush(stderr);
		out_unlock();
		out_set_eraser(NULL);
	}
	p->mode = PROGRESS_NONE;
}
