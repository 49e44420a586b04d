/*
 * report.c: what a bench run prints and leaves behind.
 *
 * - The table on stdout: one row per cell and system, aligned.
 * - results.csv: the same rows with every figure, one column per figure
 *   (per disk: bytes, share, writes, sequential fraction); empty where a
 *   figure does not apply (the sequential fraction of raw, the daemon CPU
 *   of raw, the fsync latency of a run that did not fsync).
 * - results.json: one object; per run also the rounds' throughputs, the
 *   per-second timeline, the store's bytes by kind and the devices.
 *   Members only ever get added ("version" says which).
 * - report.svg: per cell, throughput over time per system (the best round)
 *   and bytes per disk per system.
 * Each row is the system's best round; see main.c for why.
 */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const color[SYS_COUNT] = {"#1f77b4", "#7f7f7f", "#2ca02c"};

static uint64_t data_bytes(const struct run_result *r)
{
	uint64_t t = 0;
	for (int d = 0; d < r->ndisks; d++)
		t += r->disk_bytes[d];
	return t;
}

static uint64_t dev_bytes(const struct run_result *r)
{
	uint64_t t = 0;
	for (int k = 0; k < r->ndev; k++)
		t += r->dev[k].sectors * 512;
	return t;
}

static double min_seq(const struct run_result *r)
{
	double m = -1;
	for (int d = 0; d < r->ndisks; d++)
		if (r->disk_seq[d] >= 0 && (m < 0 || r->disk_seq[d] < m))
			m = r->disk_seq[d];
	return m;
}

/* Do A and B write the same cell of the matrix (in any system)? */
static bool same_cell(const struct run_result *a, const struct run_result *b)
{
	return a->w.bs == b->w.bs && a->w.files == b->w.files && a->w.jobs == b->w.jobs &&
	       !strcmp(a->w.fsync.label, b->w.fsync.label);
}

/* Is rs[i] a finished run and the first of its cell? */
static bool first_of_cell(const struct run_result *rs, int i)
{
	for (int j = 0; j < i; j++)
		if (rs[j].nrounds && same_cell(&rs[j], &rs[i]))
			return false;
	return rs[i].nrounds > 0;
}

static const struct run_result *first_finished(const struct run_result *rs, int n)
{
	for (int i = 0; i < n; i++)
		if (rs[i].nrounds)
			return &rs[i];
	return NULL;
}

/* The raw run of the same cell as R, or NULL. */
static const struct run_result *raw_of(const struct run_result *rs, int n, const struct run_result *r)
{
	for (int i = 0; i < n; i++)
		if (rs[i].nrounds && rs[i].sys == SYS_RAW && same_cell(&rs[i], r))
			return &rs[i];
	return NULL;
}

static void cpu_per_gib(const struct run_result *r, double *out)
{
	*out = r->cpu_seconds >= 0 && r->app_bytes
		       ? r->cpu_seconds / ((double)r->app_bytes / 1073741824.0)
		       : -1;
}

/* ---- the table ---- */

#define NCOL 15

/* With the DIRs on several block devices: what the kernel wrote to each
 * during each run (one device is dev_WA of the main table already). */
static void report_devices(FILE *f, const struct run_result *rs, int n)
{
	const struct run_result *devs = first_finished(rs, n);
	if (!devs || devs->ndev < 2)
		return;
	fprintf(f, "\nwritten to each block device during the run (/proc/diskstats), MiB:\n");
	fprintf(f, "%-9s %5s %4s %-10s %-8s", "bs", "files", "jobs", "fsync", "system");
	for (int k = 0; k < devs->ndev; k++)
		fprintf(f, " %10s", devs->dev[k].name);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		const struct run_result *r = &rs[i];
		if (!r->nrounds)
			continue;
		char bsz[32];
		size_format(r->w.bs, bsz, sizeof(bsz));
		fprintf(f, "%-9s %5d %4d %-10s %-8s", bsz, r->w.files, r->w.jobs, r->w.fsync.label,
			bench_system_name(r->sys));
		for (int k = 0; k < devs->ndev; k++) {
			if (k < r->ndev)
				fprintf(f, " %10.1f", (double)r->dev[k].sectors * 512 / 1048576.0);
			else
				fprintf(f, " %10s", "-");
		}
		fputc('\n', f);
	}
}

void report_table(FILE *f, const struct bench_opts *o, struct run_result *rs, int n)
{
	static const char *const head[NCOL] = {
		"bs", "files", "jobs", "fsync", "system", "MiB/s", "median", "vs_raw", "data_WA",
		"meta%", "seq%min", "share%", "fsync_p50/p99_ms", "cpu_s/GiB", "dev_WA"};
	char(*cell)[NCOL][48] = calloc((size_t)n + 1, sizeof(*cell));
	if (!cell)
		return;
	int rows = 0;
	for (int c = 0; c < NCOL; c++)
		snprintf(cell[rows][c], 48, "%s", head[c]);
	rows++;
	for (int i = 0; i < n; i++) {
		const struct run_result *r = &rs[i];
		if (!r->nrounds)
			continue;
		char(*row)[48] = cell[rows++];
		size_format(r->w.bs, row[0], 48);
		snprintf(row[1], 48, "%d", r->w.files);
		snprintf(row[2], 48, "%d", r->w.jobs);
		snprintf(row[3], 48, "%s", r->w.fsync.label);
		snprintf(row[4], 48, "%s", bench_system_name(r->sys));
		snprintf(row[5], 48, "%.0f", r->mib_s);
		snprintf(row[6], 48, "%.0f", r->mib_s_median);
		const struct run_result *raw = raw_of(rs, n, r);
		snprintf(row[7], 48, raw && raw->mib_s > 0 ? "%.2f" : "-", raw ? r->mib_s / raw->mib_s : 0);
		snprintf(row[8], 48, "%.3f", r->app_bytes ? (double)data_bytes(r) / (double)r->app_bytes : 0);
		if (r->sys == SYS_LSMFS)
			snprintf(row[9], 48, "%.3f",
				 r->app_bytes ? 100.0 * (double)r->meta_bytes / (double)r->app_bytes : 0);
		else
			snprintf(row[9], 48, "-");
		double ms = min_seq(r);
		snprintf(row[10], 48, ms >= 0 ? "%.1f" : "-", 100 * ms);
		uint64_t total = data_bytes(r);
		size_t l = 0;
		for (int d = 0; d < r->ndisks && l < 40; d++)
			l += (size_t)snprintf(row[11] + l, 48 - l, "%s%.0f", d ? "/" : "",
					      total ? 100.0 * (double)r->disk_bytes[d] / (double)total : 0);
		if (r->fsync_p50_ms >= 0)
			snprintf(row[12], 48, "%.2f/%.2f", r->fsync_p50_ms, r->fsync_p99_ms);
		else
			snprintf(row[12], 48, "-");
		double cg;
		cpu_per_gib(r, &cg);
		snprintf(row[13], 48, cg >= 0 ? "%.2f" : "-", cg);
		/* What the kernel sent to the devices, over what was written. */
		snprintf(row[14], 48, r->ndev && r->app_bytes ? "%.3f" : "-",
			 r->app_bytes ? (double)dev_bytes(r) / (double)r->app_bytes : 0);
	}
	int width[NCOL] = {0};
	for (int i = 0; i < rows; i++)
		for (int c = 0; c < NCOL; c++)
			if ((int)strlen(cell[i][c]) > width[c])
				width[c] = (int)strlen(cell[i][c]);
	for (int i = 0; i < rows; i++) {
		for (int c = 0; c < NCOL; c++)
			/* Words left, figures right, as ls and df do. */
			fprintf(f, c < 5 ? "%-*s%s" : "%*s%s", width[c], cell[i][c], c + 1 < NCOL ? "  " : "\n");
	}
	(void)o;
	free(cell);
	report_devices(f, rs, n);
}

/* ---- JSON and CSV ---- */

/* Close F; a write that failed on the way (a full --out disk) is an error
 * as much as a failed fclose. */
static int finish_file(FILE *f)
{
	bool bad = ferror(f);
	errno = 0;
	if (fclose(f) || bad)
		return errno ? -errno : -EIO;
	return 0;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A figure, or null when it does not apply (negative) or is not finite. */
static void json_num(FILE *f, double v)
{
	if (v < 0 || !isfinite(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

static void csv_num(FILE *f, double v, const char *fmt)
{
	if (v >= 0 && isfinite(v))
		fprintf(f, fmt, v);
}

/* One run R (of RS[0..n)) as a JSON object. */
static void json_run(FILE *f, const struct run_result *rs, int n, const struct run_result *r,
		     char **disks)
{
	const struct run_result *raw = raw_of(rs, n, r);
	fprintf(f, "\n{\"system\":\"%s\",\"bs\":%" PRIu64 ",\"files\":%d,\"jobs\":%d,\"fsync\":",
		bench_system_name(r->sys), r->w.bs, r->w.files, r->w.jobs);
	json_str(f, r->w.fsync.label);
	fputs(",\"rounds_mib_s\":[", f);
	for (int k = 0; k < r->nrounds; k++) {
		fputs(k ? "," : "", f);
		json_num(f, r->round_mib_s[k]);
	}
	fputs("],\"mib_s\":", f);
	json_num(f, r->mib_s);
	fputs(",\"mib_s_median\":", f);
	json_num(f, r->mib_s_median);
	fputs(",\"vs_raw\":", f);
	json_num(f, raw && raw->mib_s > 0 ? r->mib_s / raw->mib_s : -1);
	fputs(",\"seconds\":", f);
	json_num(f, r->seconds);
	fprintf(f, ",\"app_bytes\":%" PRIu64 ",\"timeline_mib_s\":[", r->app_bytes);
	for (int k = 0; k < r->ntimeline; k++) {
		fputs(k ? "," : "", f);
		json_num(f, r->timeline[k]);
	}
	uint64_t total = data_bytes(r);
	fputs("],\"disks\":[", f);
	for (int d = 0; d < r->ndisks; d++) {
		fprintf(f, "%s{\"dir\":", d ? "," : "");
		json_str(f, disks[d]);
		fprintf(f, ",\"bytes\":%" PRIu64 ",\"share\":", r->disk_bytes[d]);
		json_num(f, total ? (double)r->disk_bytes[d] / (double)total : -1);
		fputs(",\"writes\":", f);
		json_num(f, r->sys == SYS_LSMFS ? (double)r->disk_writes[d] : -1);
		fputs(",\"sequential_fraction\":", f);
		json_num(f, r->disk_seq[d]);
		fputc('}', f);
	}
	fprintf(f, "],\"data_bytes\":%" PRIu64 ",\"data_wa\":", total);
	json_num(f, r->app_bytes ? (double)total / (double)r->app_bytes : -1);
	if (r->sys == SYS_LSMFS) {
		fprintf(f,
			",\"meta\":{\"bytes\":%" PRIu64 ",\"log\":%" PRIu64 ",\"flush\":%" PRIu64
			",\"compaction\":%" PRIu64 ",\"manifest\":%" PRIu64 ",\"ratio\":",
			r->meta_bytes, r->meta_log, r->meta_flush, r->meta_compaction,
			r->meta_manifest);
		json_num(f, r->app_bytes ? (double)r->meta_bytes / (double)r->app_bytes : -1);
		fputc('}', f);
	} else {
		fputs(",\"meta\":null", f);
	}
	/* "fsync" is the policy; what its fsyncs took is apart. */
	if (r->fsync_p50_ms >= 0)
		fprintf(f,
			",\"fsync_latency\":{\"count\":%" PRIu64 ",\"p50_ms\":%.6g,\"p99_ms\":%.6g}",
			r->nfsync, r->fsync_p50_ms, r->fsync_p99_ms);
	else
		fputs(",\"fsync_latency\":null", f);
	double cg;
	cpu_per_gib(r, &cg);
	fputs(",\"cpu_seconds\":", f);
	json_num(f, r->cpu_seconds);
	fputs(",\"cpu_s_per_gib\":", f);
	json_num(f, cg);
	fputs(",\"devices\":[", f);
	for (int k = 0; k < r->ndev; k++) {
		fprintf(f, "%s{\"name\":", k ? "," : "");
		json_str(f, r->dev[k].name);
		fprintf(f,
			",\"major\":%u,\"minor\":%u,\"written_bytes\":%" PRIu64 ",\"writes\":%" PRIu64
			"}",
			r->dev[k].major, r->dev[k].minor, r->dev[k].sectors * 512, r->dev[k].writes);
	}
	fputs("]}", f);
}

static int write_json(const char *path, const struct bench_opts *o, struct run_result *rs, int n,
		      char **disks)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "{\"tool\":\"" BENCH_PROG "\",\"version\":1,\"workload\":\"seqwrite\",\"size\":%" PRIu64
		   ",\"rounds\":%d,\"disks\":[", o->size, o->rounds);
	for (int d = 0; d < o->ndisks; d++) {
		if (d)
			fputc(',', f);
		json_str(f, disks[d]);
	}
	fputs("],\"runs\":[", f);
	bool first = true;
	for (int i = 0; i < n; i++) {
		if (!rs[i].nrounds)
			continue;
		fputs(first ? "" : ",", f);
		first = false;
		json_run(f, rs, n, &rs[i], disks);
	}
	fputs("\n]}\n", f);
	return finish_file(f);
}

static int write_csv(const char *path, const struct bench_opts *o, struct run_result *rs, int n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs("bs,files,jobs,fsync,system,rounds,mib_s,mib_s_median,vs_raw,seconds,app_bytes,"
	      "data_bytes,data_wa,meta_bytes,meta_log_bytes,meta_flush_bytes,meta_compaction_bytes,"
	      "meta_manifest_bytes,meta_ratio,fsyncs,fsync_p50_ms,fsync_p99_ms,cpu_seconds,"
	      "cpu_s_per_gib",
	      f);
	for (int d = 0; d < o->ndisks; d++)
		fprintf(f, ",disk%d_bytes,disk%d_share,disk%d_writes,disk%d_seq_fraction", d, d, d, d);
	/* The devices are probed once: every run has the same list. */
	const struct run_result *devs = first_finished(rs, n);
	fputs(",dev_written_bytes", f);
	for (int k = 0; devs && k < devs->ndev; k++)
		fprintf(f, ",dev_%s_written_bytes", devs->dev[k].name);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		const struct run_result *r = &rs[i];
		if (!r->nrounds)
			continue;
		const struct run_result *raw = raw_of(rs, n, r);
		uint64_t total = data_bytes(r);
		bool lsm = r->sys == SYS_LSMFS;
		/* The fsync label is a word of ours: end, none, every:N. */
		fprintf(f, "%" PRIu64 ",%d,%d,%s,%s,%d,%.3f,%.3f,", r->w.bs, r->w.files, r->w.jobs,
			r->w.fsync.label, bench_system_name(r->sys), r->nrounds, r->mib_s, r->mib_s_median);
		csv_num(f, raw && raw->mib_s > 0 ? r->mib_s / raw->mib_s : -1, "%.4f");
		fprintf(f, ",%.4f,%" PRIu64 ",%" PRIu64 ",", r->seconds, r->app_bytes, total);
		csv_num(f, r->app_bytes ? (double)total / (double)r->app_bytes : -1, "%.6f");
		if (lsm)
			fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.6f",
				r->meta_bytes, r->meta_log, r->meta_flush, r->meta_compaction, r->meta_manifest,
				r->app_bytes ? (double)r->meta_bytes / (double)r->app_bytes : 0);
		else
			fputs(",,,,,,", f);
		fprintf(f, ",%" PRIu64 ",", r->nfsync);
		csv_num(f, r->fsync_p50_ms, "%.4f");
		fputc(',', f);
		csv_num(f, r->fsync_p99_ms, "%.4f");
		fputc(',', f);
		csv_num(f, r->cpu_seconds, "%.3f");
		double cg;
		cpu_per_gib(r, &cg);
		fputc(',', f);
		csv_num(f, cg, "%.4f");
		for (int d = 0; d < r->ndisks; d++) {
			fprintf(f, ",%" PRIu64 ",", r->disk_bytes[d]);
			csv_num(f, total ? (double)r->disk_bytes[d] / (double)total : -1, "%.6f");
			fputc(',', f);
			if (lsm)
				fprintf(f, "%" PRIu64, r->disk_writes[d]);
			fputc(',', f);
			csv_num(f, r->disk_seq[d], "%.6f");
		}
		fprintf(f, ",%" PRIu64, dev_bytes(r));
		for (int k = 0; devs && k < devs->ndev; k++) {
			fputc(',', f);
			if (k < r->ndev)
				fprintf(f, "%" PRIu64, r->dev[k].sectors * 512);
		}
		fputc('\n', f);
	}
	return finish_file(f);
}

/* ---- SVG ---- */

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			/* Control bytes are not allowed in XML 1.0 at all. */
			fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
		}
	}
}

/* The smallest 1, 2 or 5 times a power of ten at or above V. */
static double nice_max(double v)
{
	if (v <= 0)
		return 1;
	double p = pow(10, floor(log10(v)));
	for (int k = 0; k < 3; k++) {
		double m = p * (double[]){1, 2, 5}[k];
		if (m >= v)
			return m;
	}
	return p * 10;
}

#define PANEL_H 230
#define LINE_W 560
#define BAR_W 380

/* Throughput over time: a step line per system, its mean in the legend. */
static void svg_lines(FILE *f, int y0, const struct run_result *const *sys)
{
	int px = 60, py = y0 + 34, pw = LINE_W - 80, ph = PANEL_H - 72;
	double ymax = 0, xmax = 1;
	for (int k = 0; k < SYS_COUNT; k++)
		if (sys[k]) {
			for (int t = 0; t < sys[k]->ntimeline; t++)
				ymax = fmax(ymax, sys[k]->timeline[t]);
			xmax = fmax(xmax, sys[k]->seconds);
		}
	ymax = nice_max(ymax);
	xmax = nice_max(xmax);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n",
		px, py, pw, ph);
	for (int g = 0; g <= 4; g++) {
		double yv = ymax * g / 4, xv = xmax * g / 4;
		int yy = py + ph - (int)(ph * g / 4), xx = px + (int)(pw * g / 4);
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">%.0f</text>\n", px - 4,
			yy + 3, yv);
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">%.3g</text>\n", xx,
			py + ph + 12, xv);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\">MiB/s</text>\n", 4, py - 8);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">seconds</text>\n",
		px + pw / 2, py + ph + 26);
	int ly = py + 4;
	for (int k = 0; k < SYS_COUNT; k++) {
		if (!sys[k])
			continue;
		const struct run_result *r = sys[k];
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color[k]);
		/* Steps: sample i holds over second i to i + 1, the last one
		 * up to the run's end. */
		for (int i = 0; i < r->ntimeline; i++) {
			double t0 = i, t1 = i + 1 < r->ntimeline ? i + 1 : r->seconds;
			double y = py + ph - ph * fmin(r->timeline[i], ymax) / ymax;
			fprintf(f, "%s%.1f,%.1f %.1f,%.1f", i ? " " : "", px + pw * t0 / xmax, y,
				px + pw * fmax(t1, t0) / xmax, y);
		}
		fputs("\"/>\n", f);
		fprintf(f,
			"<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s %.0f MiB/s</text>\n",
			px + pw - 130, ly + 10, color[k], bench_system_name(k), r->mib_s);
		ly += 14;
	}

}

/* Bytes per disk: a bar per system in each disk's group. */
static void svg_bars(FILE *f, int y0, const struct run_result *const *sys, char **disks, int ndisks)
{
	int py = y0 + 34, ph = PANEL_H - 72;
	int bx = LINE_W + 50, bw = BAR_W - 70;
	double bmax = 0;
	for (int k = 0; k < SYS_COUNT; k++)
		if (sys[k])
			for (int d = 0; d < ndisks; d++)
				bmax = fmax(bmax, (double)sys[k]->disk_bytes[d] / 1048576.0);
	bmax = nice_max(bmax);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n",
		bx, py, bw, ph);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\">MiB per disk</text>\n", bx - 40, py - 8);
	for (int g = 0; g <= 4; g++)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">%.0f</text>\n", bx - 4,
			py + ph - ph * g / 4 + 3, bmax * g / 4);
	int groups = ndisks ? ndisks : 1, gw = bw / groups, nsys = 0;
	for (int k = 0; k < SYS_COUNT; k++)
		nsys += sys[k] != NULL;
	int barw = nsys ? (gw - 10) / nsys : gw;
	for (int d = 0; d < ndisks; d++) {
		int slot = 0;
		for (int k = 0; k < SYS_COUNT; k++) {
			if (!sys[k])
				continue;
			double h = ph * ((double)sys[k]->disk_bytes[d] / 1048576.0) / bmax;
			fprintf(f,
				"<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"><title>",
				bx + d * gw + 5 + slot * barw, py + ph - h, barw > 1 ? barw - 1 : 1, h, color[k]);
			fprintf(f, "%s on ", bench_system_name(k));
			xml_text(f, disks[d]);
			fprintf(f, ": %" PRIu64 " bytes</title></rect>\n", sys[k]->disk_bytes[d]);
			slot++;
		}
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">disk %d</text>\n",
			bx + d * gw + gw / 2, py + ph + 12, d);
	}
}

static void svg_cell(FILE *f, int y0, struct run_result *rs, int n, const struct run_result *key,
		     char **disks, int ndisks)
{
	const struct run_result *sys[SYS_COUNT] = {0};
	for (int i = 0; i < n; i++)
		if (rs[i].nrounds && same_cell(&rs[i], key))
			sys[rs[i].sys] = &rs[i];
	char bsz[32];
	size_format(key->w.bs, bsz, sizeof(bsz));
	fprintf(f, "<text x=\"10\" y=\"%d\" font-weight=\"bold\">bs=%s files=%d jobs=%d fsync=", y0 + 14,
		bsz, key->w.files, key->w.jobs);
	xml_text(f, key->w.fsync.label);
	fputs("</text>\n", f);
	svg_lines(f, y0, sys);
	svg_bars(f, y0, sys, disks, ndisks);
}

static int write_svg(const char *path, const struct bench_opts *o, struct run_result *rs, int n,
		     char **disks)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	/* One panel per cell, in the order of the runs. */
	int ncell = 0;
	for (int i = 0; i < n; i++)
		ncell += first_of_cell(rs, i);
	int height = 40 + ncell * PANEL_H;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"10\" y=\"20\" font-size=\"14\">" BENCH_PROG
		" seqwrite: throughput over time (best round) and bytes per disk; ",
		LINE_W + BAR_W + 20, height);
	char sz[32];
	size_format(o->size, sz, sizeof(sz));
	fprintf(f, "%s per run over %d disks</text>\n", sz, o->ndisks);
	int y = 30;
	for (int i = 0; i < n; i++) {
		if (!first_of_cell(rs, i))
			continue;
		svg_cell(f, y, rs, n, &rs[i], disks, o->ndisks);
		y += PANEL_H;
	}
	fputs("</svg>\n", f);
	return finish_file(f);
}

int report_write(const struct bench_opts *o, struct run_result *rs, int n, char **disks)
{
	static const char *const names[] = {"results.csv", "results.json", "report.svg"};
	int rc = 0;
	for (int k = 0; k < 3; k++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", o->out, names[k]);
		int e = k == 0   ? write_csv(path, o, rs, n)
			: k == 1 ? write_json(path, o, rs, n, disks)
				 : write_svg(path, o, rs, n, disks);
		if (e) {
			bench_err("cannot write %s: %s", path, strerror(-e));
			rc = rc ? rc : e;
		} else {
			printf("%s%s", k ? ", " : "wrote ", path);
		}
	}
	printf("\n");
	return rc;
}
