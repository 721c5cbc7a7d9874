/* SPDX-License-Identifier: BSD-3-Clause */
/* Bandwidth, message rate and perftest's peak bandwidth. */
#include "perf.h"

double bw_peak_ns_per_msg(const uint64_t *posted, const uint64_t *completed, size_t n,
			  unsigned post_list, unsigned cq_mod, uint64_t max_work)
{
	size_t step = post_list ? post_list : 1, mod = cq_mod ? cq_mod : 1;
	double best;

	if (!n)
		return 0;
	best = (double)(completed[0] - posted[0]);
	/* pairs visited ~ (n/step) * (n/mod) / 2: thin the starting points if needed */
	double work = (double)n / (double)step * (double)n / (double)mod / 2;
	if (max_work && work > (double)max_work)
		step *= (size_t)(work / (double)max_work) + 1;
	for (size_t i = 0; i < n; i += step) {
		/* Only signalled completions carry their own time: j = k*mod - 1, and the last. */
		size_t j = (i + 1 + mod - 1) / mod * mod - 1;
		for (; j < n + mod - 1; j += mod) {
			size_t jj = j < n ? j : n - 1;
			double t = (double)(completed[jj] - posted[i]) / (double)(jj - i + 1);
			if (t < best)
				best = t;
			if (jj == n - 1)
				break;
		}
	}
	return best;
}

void bw_figures(uint64_t msgs, uint32_t size, uint64_t elapsed_ns, double peak_ns_per_msg,
		struct bw_figures *out)
{
	double secs = (double)elapsed_ns / 1e9;

	out->bw_avg_Bps = secs > 0 ? (double)msgs * size / secs : 0;
	out->msg_rate_Mpps = secs > 0 ? (double)msgs / secs / 1e6 : 0;
	out->bw_peak_Bps = peak_ns_per_msg > 0 ? (double)size * 1e9 / peak_ns_per_msg : 0;
}

double Bps_to_MBps(double Bps) { return Bps / 1048576.0; }

double Bps_to_Gbps(double Bps) { return Bps * 8 / 1e9; }
