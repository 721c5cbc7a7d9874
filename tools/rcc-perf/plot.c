/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --plot DIR: data files, a gnuplot script and the PNGs it draws:
 *   lat-<test>.png   latency percentiles (min, typical, avg, p99, p99.9) vs size
 *   lat.png          typical latency of every test vs size
 *   bw.png           average bandwidth of every test vs size (peak dashed)
 * The script stays in DIR, so a chart can be restyled and redrawn by hand.
 */
#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf.h"

#define GNUPLOT_TIMEOUT_MS 60000

extern char **environ;

static bool has(const struct perf_results *r, enum perf_op op, enum perf_kind kind)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].op == op && r->v[i].kind == kind)
			return true;
	return false;
}

/* x range of the points of op (-1: any) and kind, with a margin; a single
 * size would otherwise give gnuplot an empty range. */
static void set_xrange(FILE *f, const struct perf_results *r, int op, enum perf_kind kind)
{
	uint32_t lo = UINT32_MAX, hi = 0;

	for (size_t i = 0; i < r->n; i++) {
		const struct perf_point *pt = &r->v[i];
		if (pt->kind != kind || (op >= 0 && (int)pt->op != op))
			continue;
		if (pt->size < lo)
			lo = pt->size;
		if (pt->size > hi)
			hi = pt->size;
	}
	if (hi)
		fprintf(f, "set xrange [%g:%g]\n", lo / 1.5, hi * 1.5);
}

static bool has_kind(const struct perf_results *r, enum perf_kind kind)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].kind == kind)
			return true;
	return false;
}

static double unit(double Bps, bool gbits) { return gbits ? Bps_to_Gbps(Bps) : Bps_to_MBps(Bps); }

static int write_data(const char *dir, const struct perf_results *r, enum perf_op op,
		      enum perf_kind kind, bool gbits)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s-%s.dat", dir, kind_name(kind), op_name(op));
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "rcc-perf: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (kind == KIND_LAT)
		fprintf(f, "# size_B t_min_us t_typical_us t_avg_us p99_us p99_9_us\n");
	else
		fprintf(f, "# size_B bw_peak_%s bw_avg_%s msg_rate_Mpps\n", gbits ? "Gbps" : "MBps",
			gbits ? "Gbps" : "MBps");
	for (size_t i = 0; i < r->n; i++) {
		const struct perf_point *pt = &r->v[i];
		if (pt->op != op || pt->kind != kind)
			continue;
		if (kind == KIND_LAT)
			fprintf(f, "%u %.4f %.4f %.4f %.4f %.4f\n", pt->size, pt->lat.min,
				pt->lat.median, pt->lat.mean, pt->lat.p99, pt->lat.p999);
		else
			fprintf(f, "%u %.4f %.4f %.6f\n", pt->size, unit(pt->bw.bw_peak_Bps, gbits),
				unit(pt->bw.bw_avg_Bps, gbits), pt->bw.msg_rate_Mpps);
	}
	if (fclose(f)) {
		fprintf(stderr, "rcc-perf: error writing %s\n", path);
		return -EIO;
	}
	return 0;
}

static void script_common(FILE *f, const char *title, const char *ylabel)
{
	fprintf(f, "set title \"%s\" noenhanced\n", title);
	fprintf(f, "set ylabel \"%s\"\n", ylabel);
}

static void write_script(FILE *f, const char *absdir, const struct perf_results *r,
			 const struct run_info *ri, bool gbits)
{
	char title[256];
	bool first;

	/* No absolute paths: the folder may be drawn where it was not written
	 * (results of a Soft-RoCE VM, which has no gnuplot, redrawn on the host). */
	fprintf(f, "# rcc-perf charts of %s; redraw with: cd DIR && gnuplot rcc-perf.gp\n", absdir);
	fprintf(f, "set terminal pngcairo size 960,600 noenhanced font \",10\"\n");
	fprintf(f, "set datafile commentschars \"#\"\n");
	fprintf(f, "set logscale x 2\nset format x \"%%.0b%%B\"\n");
	fprintf(f, "set xlabel \"message size [B]\"\n");
	fprintf(f, "set grid\nset key left top\nset logscale y\n");

	for (int op = 0; op < OP_COUNT; op++) {
		if (!has(r, op, KIND_LAT))
			continue;
		snprintf(title, sizeof(title), "rcc-perf %s latency (%s, %s)", op_name(op),
			 ri->transport,
			 plan_rtt_factor(op) == 2 ? "half round trip" : "round trip");
		fprintf(f, "set output \"lat-%s.png\"\n", op_name(op));
		script_common(f, title, "latency [us]");
		set_xrange(f, r, op, KIND_LAT);
		fprintf(f,
			"plot \"lat-%1$s.dat\" using 1:2 with linespoints title \"min\", "
			"\"\" using 1:3 with linespoints title \"typical (median)\", "
			"\"\" using 1:4 with linespoints title \"average\", "
			"\"\" using 1:5 with linespoints title \"p99\", "
			"\"\" using 1:6 with linespoints title \"p99.9\"\n",
			op_name(op));
	}
	if (has_kind(r, KIND_LAT)) {
		snprintf(title, sizeof(title), "rcc-perf typical latency (%s)", ri->transport);
		fprintf(f, "set output \"lat.png\"\n");
		script_common(f, title, "t_typical [us]");
		set_xrange(f, r, -1, KIND_LAT);
		fprintf(f, "plot");
		first = true;
		for (int op = 0; op < OP_COUNT; op++) {
			if (!has(r, op, KIND_LAT))
				continue;
			fprintf(f, "%s \"lat-%s.dat\" using 1:3 with linespoints title \"%s\"",
				first ? "" : ",", op_name(op), op_name(op));
			first = false;
		}
		fprintf(f, "\n");
	}
	first = true;
	for (int op = 0; op < OP_COUNT; op++) {
		if (!has(r, op, KIND_BW))
			continue;
		if (first) {
			snprintf(title, sizeof(title), "rcc-perf bandwidth (%s)", ri->transport);
			fprintf(f, "set output \"bw.png\"\nunset logscale y\nset key left top\n");
			script_common(f, title,
				      gbits ? "bandwidth [Gb/s]" : "bandwidth [MB/s = 2^20 B/s]");
			set_xrange(f, r, -1, KIND_BW);
			fprintf(f, "plot");
		}
		fprintf(f,
			"%s \"bw-%s.dat\" using 1:3 with linespoints lc %d "
			"title \"%s average\", "
			"\"\" using 1:2 with lines dt 2 lc %d title \"%s peak\"",
			first ? "" : ",", op_name(op), op + 1, op_name(op), op + 1, op_name(op));
		first = false;
	}
	if (!first)
		fprintf(f, "\n");
}

/* Run gnuplot on the script, bounded in time. */
static int run_gnuplot(const char *dir)
{
	char *argv[] = { "gnuplot", "rcc-perf.gp", NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc, status;

	/* gnuplot runs in the chart folder: the script names its files relatively */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addchdir_np(&fa, dir);
	rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		fprintf(stderr, "rcc-perf: cannot run gnuplot (%s): apt-get install gnuplot-nox\n",
			strerror(rc));
		return -rc;
	}
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		int n = poll(&p, 1, GNUPLOT_TIMEOUT_MS);
		close(pfd);
		if (n == 0) {
			fprintf(stderr, "rcc-perf: gnuplot took more than %d s: stopped\n",
				GNUPLOT_TIMEOUT_MS / 1000);
			kill(pid, SIGKILL);
		}
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "rcc-perf: gnuplot failed; script: %s/rcc-perf.gp\n", dir);
		return -EIO;
	}
	return 0;
}

int plot_results(const char *dir, const struct perf_config *cfg, const struct perf_params *p,
		 const struct run_info *ri, const struct perf_results *r)
{
	char path[4096], absdir[PATH_MAX];
	FILE *f;
	int rc;

	(void)p;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "rcc-perf: cannot create %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	if (!realpath(dir, absdir) || strpbrk(absdir, "\"\\\n")) {
		fprintf(stderr, "rcc-perf: unusable plot folder '%s'\n", dir);
		return -EINVAL;
	}
	for (int op = 0; op < OP_COUNT; op++) {
		for (int k = 0; k < KIND_COUNT; k++) {
			if (!has(r, op, k))
				continue;
			rc = write_data(dir, r, op, k, cfg->report_gbits);
			if (rc)
				return rc;
		}
	}
	snprintf(path, sizeof(path), "%s/rcc-perf.gp", dir);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "rcc-perf: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	write_script(f, absdir, r, ri, cfg->report_gbits);
	if (fclose(f)) {
		fprintf(stderr, "rcc-perf: error writing %s\n", path);
		return -EIO;
	}
	return run_gnuplot(dir);
}
