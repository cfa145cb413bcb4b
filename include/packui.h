/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_PACKUI_H
#define SHARDFS_PACKUI_H

/*
 * The user-facing side of a long `shardfs pack` run: a thread that waits
 * for SIGINT, SIGTERM and SIGHUP (blocked in every other thread, so the
 * work is never interrupted in the middle of a system call) and, on a
 * terminal, redraws one progress line four times a second: files and
 * bytes done of the total, rate, ETA.
 *
 * The first signal sets `stop` (the work polls it, aborts its uploads
 * and exits with 128 + the signal); a second one ends the process at
 * once, the default way.
 *
 * The work updates the counters; the thread only reads them: atomics
 * are the whole interface, no lock.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum packui_phase { PACKUI_SCAN = 0, PACKUI_PACK, PACKUI_INDEX };

struct packui {
	atomic_int stop;  /* the signal that asked to stop, or 0 */
	atomic_int phase; /* enum packui_phase */
	atomic_uint_fast64_t files_done, bytes_done;
	atomic_uint_fast64_t files_total, bytes_total;

	/* private */
	const char *label; /* borrowed: what is being scanned */
	bool progress;
	double t0;
	atomic_int quit;
	pthread_t thread;
	bool running;
};

/* PROGRESS: draw the line (on stdout). LABEL is borrowed. */
void packui_init(struct packui *ui, bool progress, const char *label);

/*
 * Blocks the signals in the calling thread (call it before any other
 * thread is created, so that all inherit the mask) and starts the
 * thread. 0 or a negative errno.
 */
int packui_start(struct packui *ui);

/* Stops the thread; ends the progress line with a last update. */
void packui_stop(struct packui *ui);

/* Seconds since packui_init(). */
double packui_elapsed(const struct packui *ui);

#endif
