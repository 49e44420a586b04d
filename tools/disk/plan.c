/*
 * plan.c: which sections move where to even the disks out.
 *
 * Each disk d with weight w_d > 0 should hold the share B x w_d / W of
 * the B bytes the sections hold (W the sum of the weights), and the
 * share N x w_d / W of the N sections (the sections decide where new data
 * goes: on a young filesystem most are empty).  The plan:
 *   1. every section on a disk of weight 0 goes (remove): the biggest
 *      first, each to the disk furthest below its byte share among those
 *      with room for it (-ENOSPC when none has);
 *   2. the move that cuts most, per byte moved, the distance from even,
 *      sum over disks of |held - share| + (B/N) x |sections - share|,
 *      again and again until no move cuts it by more than a quarter of
 *      an average section; a disk without room for a section is not
 *      offered it.  A section moved twice is one move (none if it comes
 *      back).  What is left is under about one section's bytes per disk,
 *      or no single move could help, or the disks below their shares
 *      have no room left; a plan made again right after is empty (but
 *      for moves that room held back and the moves made room for).
 *
 * Room: disks that are directories of one backing filesystem (one
 * `device`) share its free space.  A move copies the whole section before
 * it removes the old copy, so it needs the section's bytes free on the
 * filesystem it goes to.  The plan holds each filesystem to its free space
 * now, less a chunk kept free (as placement keeps it: a filesystem with
 * less takes no new chunk, and a copy of the metadata store there needs
 * room to write), less every byte the plan copies onto it.  It credits a
 * filesystem nothing for what the plan moves off it, though the moves run
 * one at a time and a move's removal frees room for the moves after it:
 *   - a section planned twice is one move, in the place of its first, so
 *     the order in which the plan was made is not the order in which its
 *     bytes come and go;
 *   - online, the daemon's writes take free space while the moves run;
 *   - plan_and_move checks the same rule (without the chunk) before
 *     anything moves, with nothing to know the order by.
 * The cost: a filesystem too full to take a section before it gave one
 * only gives in this run; the room that freed is there for the next.
 */
#include "disk.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct state {
	const struct status *st;
	uint32_t *at;      /* by section: the disk it would be on */
	bool *moved;       /* by section: in the plan already */
	double held[LSMFS_MAX_DISKS], share[LSMFS_MAX_DISKS];
	double count[LSMFS_MAX_DISKS], count_share[LSMFS_MAX_DISKS];
	const double *weight;
	uint32_t only;     /* drain only this disk's sections; UINT32_MAX: every weight-0 disk's */
	/* By disk index: the disk whose backing filesystem it is on (the
	 * first disk of st on that device), and by that disk: the bytes the
	 * plan may still copy onto that filesystem. */
	uint32_t group[LSMFS_MAX_DISKS];
	uint64_t room[LSMFS_MAX_DISKS];
	struct plan *p;
	size_t cap;
};

/* Put section sec on disk `to` in the plan: a new move, or a changed
 * one (none left when it goes back where it was). */
static int add_move(struct state *s, uint32_t sec, uint32_t to)
{
	struct plan *p = s->p;
	uint32_t from = s->at[sec], home = s->st->section_disk[sec];
	uint64_t bytes = s->st->section_bytes[sec];
	double b = (double)bytes;
	/* Its copy planned onto `from` is not made now; one onto `to` is
	 * (none back home, where it is). */
	if (from != home)
		s->room[s->group[from]] += bytes;
	if (to != home)
		s->room[s->group[to]] -= bytes;
	s->held[from] -= b;
	s->held[to] += b;
	s->count[from]--;
	s->count[to]++;
	s->at[sec] = to;
	if (s->moved[sec]) {
		for (size_t i = 0; i < p->n; i++)
			if (p->moves[i].section == sec) {
				p->moves[i].to = to;
				if (to == p->moves[i].from) {
					p->bytes -= bytes;
					p->moves[i] = p->moves[--p->n];
					s->moved[sec] = false;
				}
				return 0;
			}
	}
	if (p->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 64;
		struct move *g = realloc(p->moves, nc * sizeof(*g));
		if (!g)
			return -ENOMEM;
		p->moves = g;
		s->cap = nc;
	}
	p->moves[p->n++] = (struct move){.section = sec, .from = s->st->section_disk[sec], .to = to,
					 .bytes = bytes};
	p->bytes += bytes;
	s->moved[sec] = true;
	return 0;
}

static bool takes(const struct state *s, uint32_t d)
{
	return d < LSMFS_MAX_DISKS && s->weight[d] > 0 && status_disk(s->st, d) >= 0;
}

/* Whether section sec, where the plan has it now, may go to disk `to`:
 * back where it is costs nothing; elsewhere its bytes must fit in the room
 * to's filesystem has left in the plan (with the copy the plan gave that
 * filesystem already, when the section moves on from a disk on it). */
static bool fits(const struct state *s, uint32_t sec, uint32_t to)
{
	uint32_t home = s->st->section_disk[sec], at = s->at[sec];
	uint64_t bytes = s->st->section_bytes[sec];
	if (to == home)
		return true;
	uint64_t room = s->room[s->group[to]];
	if (at != home && s->group[at] == s->group[to])
		room += bytes;
	return bytes <= room;
}

/* The disk where the plan has section sec's partner (SCHEMA.md "Copies":
 * the second copy of a chunk is in its section's partner, which must be on
 * another disk); UINT32_MAX when it has none. */
static uint32_t partner_at(const struct state *s, uint32_t sec)
{
	uint32_t p = section_of_copy(sec, 1, s->st->sections);
	return p == UINT32_MAX ? UINT32_MAX : s->at[p];
}

/* The disk furthest below its byte share (counts break ties) that has
 * room for section sec, not the one its partner is on unless no other
 * has room (a drain to a single disk: the mover then keeps one copy of
 * such chunks, move_copy.c); UINT32_MAX when none has. */
static uint32_t neediest(const struct state *s, uint32_t sec)
{
	uint32_t best = UINT32_MAX, pd = partner_at(s, sec);
	for (int pass = 0; pass < 2 && best == UINT32_MAX; pass++) {
		double gap = -INFINITY;
		for (uint32_t i = 0; i < s->st->ndisks; i++) {
			uint32_t d = s->st->disk[i].index;
			if (!takes(s, d) || d == s->at[sec] || !fits(s, sec, d) || (!pass && d == pd))
				continue;
			double g = s->share[d] - s->held[d] + (s->count_share[d] - s->count[d]) * 1e-9;
			if (g > gap) {
				gap = g;
				best = d;
			}
		}
	}
	return best;
}

static int drain_unweighted(struct state *s)
{
	const struct status *st = s->st;
	for (;;) {
		uint32_t pick = UINT32_MAX;
		for (uint32_t sec = 0; sec < st->sections; sec++)
			if (!s->moved[sec] && !takes(s, s->at[sec]) &&
			    (s->only == UINT32_MAX || s->at[sec] == s->only) &&
			    (pick == UINT32_MAX || st->section_bytes[sec] > st->section_bytes[pick]))
				pick = sec;
		if (pick == UINT32_MAX)
			return 0;
		/* The biggest first, each where it fits: a disk too full for
		 * one section may still take a smaller one. */
		uint32_t to = neediest(s, pick);
		if (to == UINT32_MAX)
			return -ENOSPC; /* it must go, and no disk may take it */
		int rc = add_move(s, pick, to);
		if (rc)
			return rc;
	}
}

/* How far from even: bytes off their shares, plus sections off theirs
 * at `unit` bytes each. */
static double cost_of(double held, double share, double count, double cshare, double unit)
{
	return fabs(held - share) + unit * fabs(count - cshare);
}

static int balance(struct state *s)
{
	const struct status *st = s->st;
	double total = 0;
	for (uint32_t sec = 0; sec < st->sections; sec++)
		total += (double)st->section_bytes[sec];
	/* A section counts as much as an average one holds (1 byte on an
	 * empty filesystem, where only the counts matter). */
	double unit = total / st->sections > 1 ? total / st->sections : 1;
	for (;;) {
		uint32_t best_sec = UINT32_MAX, best_to = 0;
		double best = 0;
		for (uint32_t sec = 0; sec < st->sections; sec++) {
			double b = (double)st->section_bytes[sec];
			uint32_t o = s->at[sec];
			if (!takes(s, o))
				continue;
			double before_o = cost_of(s->held[o], s->share[o], s->count[o], s->count_share[o], unit);
			double after_o = cost_of(s->held[o] - b, s->share[o], s->count[o] - 1,
						 s->count_share[o], unit);
			if (after_o >= before_o)
				continue; /* only from a disk this move helps */
			for (uint32_t i = 0; i < st->ndisks; i++) {
				uint32_t u = st->disk[i].index;
				if (u == o || !takes(s, u) || !fits(s, sec, u))
					continue;
				double gain = before_o - after_o +
					      cost_of(s->held[u], s->share[u], s->count[u], s->count_share[u], unit) -
					      cost_of(s->held[u] + b, s->share[u], s->count[u] + 1,
						      s->count_share[u], unit);
				/* Most balance per byte moved; a gain under a
				 * page (or a fraction of a section) is noise. */
				double per = gain / (b + 4096);
				/* Onto its partner's disk only when no move that
				 * keeps them apart helps (SCHEMA.md "Copies": the
				 * daemon refuses it for a section holding chunks
				 * with two copies, and the section stays). */
				if (u == partner_at(s, sec))
					per /= 1e6;
				if (gain > 4096 && gain > unit / 4 && per > best) {
					best = per;
					best_sec = sec;
					best_to = u;
				}
			}
		}
		if (best_sec == UINT32_MAX)
			return 0;
		int rc = add_move(s, best_sec, best_to);
		if (rc)
			return rc;
	}
}

static int plan(const struct status *st, const double *weight, bool even, uint32_t only,
		struct plan *p)
{
	memset(p, 0, sizeof(*p));
	struct state s = {.st = st, .weight = weight, .p = p, .only = only};
	s.at = malloc(st->sections * sizeof(*s.at));
	s.moved = calloc(st->sections, sizeof(*s.moved));
	if (!s.at || !s.moved) {
		free(s.at);
		free(s.moved);
		return -ENOMEM;
	}
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
		s.group[d] = d;
	for (uint32_t i = 0; i < st->ndisks; i++) {
		const struct disk_info *di = &st->disk[i];
		uint32_t j = 0;
		while (st->disk[j].device != di->device)
			j++;
		uint32_t g = st->disk[j].index;
		s.group[di->index] = g;
		/* The disks on one filesystem read its free space one after
		 * the other: the least they saw, less a chunk kept free. */
		uint64_t room = di->available > st->chunk_size ? di->available - st->chunk_size : 0;
		if (j == i || room < s.room[g])
			s.room[g] = room;
	}
	double total = 0, wsum = 0;
	for (uint32_t sec = 0; sec < st->sections; sec++) {
		uint32_t d = st->section_disk[sec];
		s.at[sec] = d;
		if (d < LSMFS_MAX_DISKS) {
			s.held[d] += (double)st->section_bytes[sec];
			s.count[d]++;
		}
		total += (double)st->section_bytes[sec];
	}
	for (uint32_t i = 0; i < st->ndisks; i++)
		if (takes(&s, st->disk[i].index))
			wsum += weight[st->disk[i].index];
	int rc = wsum > 0 ? 0 : -ENOSPC;
	for (uint32_t i = 0; !rc && i < st->ndisks; i++) {
		uint32_t d = st->disk[i].index;
		if (takes(&s, d)) {
			s.share[d] = total * weight[d] / wsum;
			s.count_share[d] = st->sections * weight[d] / wsum;
		}
	}
	if (!rc)
		rc = drain_unweighted(&s);
	if (!rc && even)
		rc = balance(&s);
	free(s.at);
	free(s.moved);
	if (rc)
		plan_free(p);
	return rc;
}

int plan_rebalance(const struct status *st, const double *weight, struct plan *p)
{
	return plan(st, weight, true, UINT32_MAX, p);
}

int plan_drain(const struct status *st, const double *weight, uint32_t disk, struct plan *p)
{
	return plan(st, weight, false, disk, p);
}

void plan_free(struct plan *p)
{
	free(p->moves);
	memset(p, 0, sizeof(*p));
}

/* By default a disk weighs the room lsmfs can have on its backing
 * filesystem, in GiB (--weight speaks the same unit): its free space plus
 * the bytes the sections of the disks on it hold, which is its capacity
 * less other files, the copies of the metadata store and the blocks kept
 * for root; disks that are directories of one filesystem share it.  A
 * disk full of other files so weighs little, and a move between
 * filesystems leaves the weights as they were. */
void plan_default_weights(const struct status *st, double *weight, const bool *given)
{
	for (uint32_t i = 0; i < st->ndisks; i++) {
		const struct disk_info *d = &st->disk[i];
		if (given[d->index])
			continue;
		unsigned sharing = 0;
		uint64_t held = 0;
		for (uint32_t j = 0; j < st->ndisks; j++)
			if (!st->disk[j].missing && st->disk[j].device == d->device) {
				sharing++;
				held += st->disk[j].bytes;
			}
		weight[d->index] = d->usable && sharing ? ((double)d->available + (double)held) /
								  (1u << 30) / sharing
							: 0;
	}
}
